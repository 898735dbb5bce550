"""Incremental sync: skip by (mtime, size), hash, re-chunk, prune, embedding cache, bad files.

Every test that touches the index runs on each storage backend (``backend`` fixture).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memdir import FakeEmbedder, Memory
from memdir.config.settings import ChunkingConfig
from memdir.index import sync as sync_module
from memdir.index.base import KeywordQuery
from memdir.index.sync import chunk_id, decode_markdown, scan_dirty, sync_files
from memdir.text import query_terms
from tests.helpers import memory_chunks, write
from tests.index.conftest import Backend


def test_first_sync_indexes_memory_files_only(backend: Backend, workspace: Path) -> None:
    write(workspace, "memory/2026-11-01.md", "# day\n- redis port 6380\n")
    write(workspace, "skills/deploy/SKILL.md", "# deploy\nhelm upgrade\n")
    write(workspace, "USER.md", "# me\nsecret-ish user profile\n")
    write(workspace, "notes.txt", "not markdown")
    mgr = backend.manager(workspace, FakeEmbedder())
    report = mgr.sync()
    paths = set(mgr.store().file_rows())
    assert paths == {"MEMORY.md", "memory/2026-11-01.md", "skills/deploy/SKILL.md"}
    assert report.added == 3
    assert report.embedded == mgr.store().counts()["chunks"]
    assert mgr.store().counts()["pending_vectors"] == 0


def test_unchanged_files_are_skipped_without_reading(backend: Backend, workspace: Path) -> None:
    path = write(workspace, "memory/a.md", "alpha beta\n")
    mgr = backend.manager(workspace)
    mgr.sync()
    # Make the file unreadable: a sync that tried to read it would record a warning.
    os.chmod(path, 0)
    try:
        assert not scan_dirty(mgr.store(), mgr.workspace)
        report = mgr.sync()
    finally:
        os.chmod(path, 0o644)
    assert report.scanned == 0 and not report.warnings


def test_touched_but_identical_file_is_not_rechunked(backend: Backend, workspace: Path) -> None:
    path = write(workspace, "memory/a.md", "alpha beta\n")
    emb = FakeEmbedder()
    mgr = backend.manager(workspace, emb)
    mgr.sync()
    calls = len(emb.calls)
    os.utime(path, ns=(1, 1))
    report = mgr.sync()
    assert report.unchanged == 1 and report.updated == 0
    assert len(emb.calls) == calls
    assert not scan_dirty(mgr.store(), mgr.workspace)


def test_an_edit_reads_every_row_once_then_the_changed_rows_under_the_lock(
    backend: Backend, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mgr = backend.synced_notes(workspace, 5, "note {i} alpha")
    store = mgr.store()
    reads: list[list[str] | None] = []
    real = store.file_rows

    def counting(paths=None):  # type: ignore[no-untyped-def]
        reads.append(None if paths is None else list(paths))
        return real(paths)

    monkeypatch.setattr(store, "file_rows", counting)
    write(workspace, "memory/n3.md", "note 3 alpha, edited\n")
    write(workspace, "memory/new.md", "a new note\n")
    report = mgr.sync()
    assert (report.updated, report.added) == (1, 1)
    # The look at every file, then (under the writer lock) the rows of the two it found.
    assert reads == [None, ["memory/n3.md", "memory/new.md"]]
    monkeypatch.undo()
    assert not scan_dirty(store, mgr.workspace)
    hits = mgr.keyword_search(KeywordQuery.build(query_terms("note 3 edited")), 1)
    assert [store.chunks_by_seq([seq])[seq].path for seq, _ in hits] == ["memory/n3.md"]


def test_a_file_synced_elsewhere_while_waiting_for_the_lock_ends_right(
    workspace: Path,
) -> None:
    """A search finds a file changed, another process syncs it before the search gets the
    writer lock, and the file goes back to its old text (an undo): the index must end with
    the old text (it once kept the other process's, judged by rows read before the lock)."""
    path = workspace / "memory" / "x.md"
    now = time.time_ns()

    def put(text: str, age_s: int) -> None:
        write(workspace, "memory/x.md", text)
        os.utime(path, ns=(now - age_s * 10**9, now - age_s * 10**9))

    put("the heron nests by the pond\n", 3)
    with (
        Memory(workspace, embedder=FakeEmbedder()) as a,
        Memory(workspace, embedder=FakeEmbedder()) as b,
    ):
        a.search("heron")
        b.sync()
        put("a kingfisher dives into the river\n", 2)
        lock = a.index.write_lock
        interleaved = []

        @contextlib.contextmanager
        def late_lock(timeout: float = 60.0) -> Iterator[None]:
            if not interleaved:
                interleaved.append(1)
                b.sync()  # the other process indexes the edit...
                put("the heron nests by the pond\n", 1)  # ...which is then undone
            with lock(timeout):
                yield

        a.index.write_lock = late_lock  # type: ignore[method-assign]
        a.index.freshness.forget()  # this search looks at every file
        a.search("heron")
        assert interleaved
    with Memory(workspace, embedder=FakeEmbedder()) as fresh:
        assert [r.path for r in fresh.search("heron pond").results] == ["memory/x.md"]
        assert not fresh.search("kingfisher river").results


def test_edit_reembeds_only_changed_chunks(backend: Backend, workspace: Path) -> None:
    lines = [f"- note {i}: " + "word " * 60 for i in range(40)]
    path = write(workspace, "memory/big.md", "\n".join(lines) + "\n")
    emb = FakeEmbedder()
    mgr = backend.manager(workspace, emb)
    first = mgr.sync()
    assert first.embedded > 5
    lines[-1] = "- changed last line about kafka"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    second = mgr.sync()
    assert second.updated == 1
    assert second.embedded <= 2  # the edited chunk (and at most one overlapping neighbour)
    assert second.cache_hits >= second.chunks_written - 2


def test_pending_chunks_of_one_file_are_listed_alone(backend: Backend, workspace: Path) -> None:
    write(workspace, "memory/a.md", "- alpha note about kafka\n")
    write(workspace, "memory/b.md", "- beta note about redis\n" + "- more words here\n" * 80)
    mgr = backend.manager(workspace, FakeEmbedder())
    mgr.sync(embed=False)
    store = mgr.store()
    everything = store.chunks_without_vectors()
    of_b = store.chunks_without_vectors(path="memory/b.md")
    rows = store.chunks_by_seq([seq for seq, _, _ in everything])
    assert len(of_b) > 1
    assert {rows[seq].path for seq, _, _ in of_b} == {"memory/b.md"}
    assert of_b == [item for item in everything if rows[item[0]].path == "memory/b.md"]
    assert len(of_b) < len(everything)
    assert store.chunks_without_vectors(path="memory/none.md") == []


def test_deleted_file_is_pruned(backend: Backend, workspace: Path) -> None:
    path = write(workspace, "memory/gone.md", "ephemeral words\n")
    mgr = backend.manager(workspace)
    mgr.sync()
    path.unlink()
    report = mgr.sync()
    assert report.removed == 1
    assert "memory/gone.md" not in mgr.store().file_rows()
    assert mgr.keyword_search(KeywordQuery(("ephemeral",)), 5) == []


def test_embedding_cache_survives_a_rebuild(backend: Backend, workspace: Path) -> None:
    write(workspace, "memory/a.md", "cached text about sqlite\n")
    emb = FakeEmbedder()
    mgr = backend.manager(workspace, emb)
    mgr.sync()
    before = sum(emb.calls)
    report = mgr.sync(force=True)
    assert sum(emb.calls) == before  # every vector came from the cache
    assert report.cache_hits >= 1


def test_invalid_utf8_is_indexed_with_replacement_and_warning(
    backend: Backend, workspace: Path
) -> None:
    (workspace / "memory" / "bad.md").write_bytes(b"good words \xff\xfe broken\n")
    mgr = backend.manager(workspace)
    report = mgr.sync()
    assert any("invalid UTF-8" in w for w in report.warnings)
    assert "memory/bad.md" in mgr.store().file_warnings()
    assert mgr.keyword_search(KeywordQuery(("broken",)), 5)


def test_binary_file_is_skipped_with_warning(backend: Backend, workspace: Path) -> None:
    (workspace / "memory" / "blob.md").write_bytes(b"\x00\x01\x02binaryword\x00" * 100)
    mgr = backend.manager(workspace)
    mgr.sync()
    assert "binary" in mgr.store().file_warnings()["memory/blob.md"]
    assert mgr.keyword_search(KeywordQuery(("binaryword",)), 5) == []
    # Not re-read on every sync.
    assert not scan_dirty(mgr.store(), mgr.workspace)


def test_empty_file_has_no_chunks(backend: Backend, workspace: Path) -> None:
    write(workspace, "memory/empty.md", "")
    write(workspace, "memory/blank.md", "\n\n   \n")
    mgr = backend.manager(workspace, FakeEmbedder())
    mgr.sync()
    rows = mgr.store().file_rows()
    assert {"memory/empty.md", "memory/blank.md"} <= set(rows)
    seqs, _ = mgr.store().all_vectors()  # every chunk has a vector here
    assert len(seqs) == mgr.store().counts()["chunks"]
    paths = {r.path for r in mgr.store().chunks_by_seq([int(s) for s in seqs]).values()}
    assert "memory/empty.md" not in paths and "memory/blank.md" not in paths


def test_huge_single_line_file_is_keyword_only(backend: Backend, workspace: Path) -> None:
    line = "zebra " + " ".join(f"w{i}" for i in range(1_200_000))  # ~10 MB, one line
    assert len(line) > 9_000_000
    (workspace / "memory" / "huge.md").write_text(line, encoding="utf-8")
    emb = FakeEmbedder()
    mgr = backend.manager(workspace, emb)
    report = mgr.sync()
    assert any("too large to embed" in w for w in report.warnings)
    assert mgr.store().counts()["chunks"] > 1000
    assert mgr.store().counts()["pending_vectors"] == 0  # never queued for embedding
    assert mgr.keyword_search(KeywordQuery(("zebra",)), 5)


def test_file_deleted_between_scan_and_read_is_pruned(backend: Backend, workspace: Path) -> None:
    path = write(workspace, "memory/vanishing.md", "now you see me\n")
    mgr = backend.manager(workspace)
    mgr.sync()
    path.write_text("changed text\n", encoding="utf-8")
    dirty = scan_dirty(mgr.store(), mgr.workspace)
    path.unlink()
    report = sync_files(
        mgr.store(), mgr.workspace, chunking=ChunkingConfig(), embedder=None, dirty=dirty
    )
    assert report.removed == 1
    assert "memory/vanishing.md" not in mgr.store().file_rows()


def test_symlink_out_of_workspace_is_not_followed(
    backend: Backend, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    write(outside, "secret.md", "outside secret token\n")
    os.symlink(outside / "secret.md", workspace / "memory" / "link.md")
    os.symlink(outside, workspace / "memory" / "linkdir")
    mgr = backend.manager(workspace)
    mgr.sync()
    assert not any("link" in p for p in mgr.store().file_rows())
    assert mgr.keyword_search(KeywordQuery(("secret",)), 5) == []


def test_provider_failure_leaves_chunks_pending_then_recovers(
    backend: Backend, workspace: Path
) -> None:
    write(workspace, "memory/a.md", "zebra words here\n")
    broken = FakeEmbedder(fail_with="provider timed out")
    mgr = backend.manager(workspace, broken)
    report = mgr.sync()
    assert any("provider timed out" in w for w in report.warnings)
    counts = mgr.store().counts()
    expected = memory_chunks(workspace) + 1  # MEMORY.md + a.md
    assert counts["pending_vectors"] == counts["chunks"] == expected
    assert mgr.keyword_search(KeywordQuery(("zebra",)), 5)  # still findable by keyword
    mgr.close()
    healthy = backend.manager(workspace, FakeEmbedder())
    assert healthy.sync().embedded == expected
    assert healthy.store().counts()["pending_vectors"] == 0


def test_chunk_id_depends_on_every_part() -> None:
    base = chunk_id("memory", "a.md", 1, 2, "h", "m")
    assert (
        len(
            {
                base,
                chunk_id("extra", "a.md", 1, 2, "h", "m"),
                chunk_id("memory", "b.md", 1, 2, "h", "m"),
                chunk_id("memory", "a.md", 2, 2, "h", "m"),
                chunk_id("memory", "a.md", 1, 3, "h", "m"),
                chunk_id("memory", "a.md", 1, 2, "g", "m"),
                chunk_id("memory", "a.md", 1, 2, "h", "n"),
            }
        )
        == 7
    )


def test_decode_markdown_strips_bom() -> None:
    text, warning = decode_markdown("\ufeff# title\n".encode(), "x.md")
    assert text == "# title\n" and warning is None


def test_memory_sync_reports_changes(memory: Memory, workspace: Path) -> None:
    write(workspace, "memory/x.md", "hello\n")
    assert memory.sync().changed
    assert not memory.sync().changed


def test_file_changed_while_being_read_is_synced_again(
    backend: Backend, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(workspace, "memory/racy.md", "first version\n")
    real_read = sync_module.read_regular_file

    def read_then_edit(self: Path, **kwargs) -> bytes:  # type: ignore[no-untyped-def]
        data = real_read(self, **kwargs)
        if self.name == "racy.md":
            with open(self, "a", encoding="utf-8") as fh:  # a writer appends meanwhile
                fh.write("second version zebra\n")
        return data

    mgr = backend.manager(workspace)
    monkeypatch.setattr(sync_module, "read_regular_file", read_then_edit)
    mgr.sync()
    monkeypatch.setattr(sync_module, "read_regular_file", real_read)
    # What was indexed is the first version, and the file is known to be stale.
    assert [e.path for e in scan_dirty(mgr.store(), mgr.workspace).changed] == ["memory/racy.md"]
    mgr.sync()
    assert mgr.keyword_search(KeywordQuery(("zebra",)), 5)
    assert not scan_dirty(mgr.store(), mgr.workspace)
    assert path.read_text(encoding="utf-8").count("version") == 2


def test_decode_markdown_refuses_binary_like_text() -> None:
    text, warning = decode_markdown(bytes(range(1, 256)) * 100, "x.md")
    assert text is None and warning is not None and "binary-like" in warning


def test_decode_markdown_replaces_late_nul_bytes() -> None:
    data = b"plain words\n" * 1000 + b"the key\x00 is blue\n"
    text, warning = decode_markdown(data, "x.md")
    assert text is not None and "\x00" not in text and "the key\ufffd is blue" in text
    assert warning is not None and "control characters" in warning


def test_embed_plan_caps_pieces_of_one_long_line() -> None:
    from memdir.index.sync import MAX_EMBEDDED_PIECES_PER_LINE, embed_plan
    from memdir.markdown.chunking import chunk_markdown

    pieces = chunk_markdown("short first line\n" + "word " * 20_000 + "\nlast line\n")
    flags, capped = embed_plan(pieces)
    long_line = [f for p, f in zip(pieces, flags, strict=True) if p.start_line == p.end_line == 2]
    assert sum(long_line) == MAX_EMBEDDED_PIECES_PER_LINE
    assert capped == len(long_line) - MAX_EMBEDDED_PIECES_PER_LINE > 0
    assert flags[0] and flags[-1]


def test_a_file_that_cannot_be_chunked_is_skipped_and_the_rest_indexed(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(workspace, "memory/bad.md", "# bad\nboom\n")
    write(workspace, "memory/good.md", "# good\nthe walrus sings\n")
    real = sync_module.chunk_file

    def chunk(path: str, text: str, chunking: ChunkingConfig):  # type: ignore[no-untyped-def]
        if "boom" in text:
            raise RecursionError("maximum recursion depth exceeded")
        return real(path, text, chunking)

    monkeypatch.setattr(sync_module, "chunk_file", chunk)
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        report = mem.sync()
        assert any("bad.md: cannot be chunked (RecursionError" in w for w in report.warnings)
        assert [h.path for h in mem.search("walrus").results] == ["memory/good.md"]
        assert "cannot be chunked" in mem.status()["file_warnings"]["memory/bad.md"]
