"""The SQLite file's own lifecycle: an identity change rebuilds into a new file swapped in,
a corrupt file is moved aside and rebuilt, a read-only workspace keeps its index elsewhere."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from memdir import FakeEmbedder, Memory
from memdir.config.settings import ChunkingConfig
from memdir.index.manager import IndexManager, IndexSettings
from memdir.workspace.layout import Workspace
from tests.helpers import write


def _manager(root: Path, embedder: FakeEmbedder | None, tokens: int = 400) -> IndexManager:
    chunking = ChunkingConfig(tokens=tokens, overlap=20)
    return IndexManager(Workspace(root), embedder=embedder, settings=IndexSettings(chunking))


def test_identity_change_rebuilds_and_publishes_as_one_commit(workspace: Path) -> None:
    write(workspace, "memory/a.md", "\n".join(f"line {i} " + "word " * 30 for i in range(30)))
    first = _manager(workspace, FakeEmbedder(dims=32))
    first.sync()
    chunks_before = first.store().counts()["chunks"]
    ids_before = dict(first.store().conn.execute("SELECT hash, id FROM embeddings"))
    # A reader that keeps its connection open across the rebuild (another process would).
    reader = _manager(workspace, FakeEmbedder(dims=32))
    reader_store = reader.store()
    assert reader_store.counts()["chunks"] == chunks_before

    second = _manager(workspace, FakeEmbedder(dims=48), tokens=200)
    assert not second.identity_matches()
    second.sync()
    assert second.identity_matches()
    counts = second.store().counts()
    assert counts["chunks"] > chunks_before
    assert counts["pending_vectors"] == 0
    assert not list(second.dir.glob("index.sqlite.rebuild-*"))
    # The reader's own connection sees the new index, whole: counters agree with the rows.
    assert reader.store() is reader_store
    assert reader_store.counts() == counts
    rows = reader_store.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert rows == counts["chunks"]
    # The cached vectors kept their ids (a reader's matrix compares (chunk, vector id) links).
    ids_after = dict(second.store().conn.execute("SELECT hash, id FROM embeddings"))
    assert all(ids_after[h] == i for h, i in ids_before.items())
    for manager in (first, reader, second):
        manager.close()


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_bytes(b"this is not a database at all" * 100),
        lambda p: p.write_bytes(p.read_bytes()[:1500]),
        lambda p: p.write_bytes(b""),
    ],
    ids=["garbage", "truncated", "empty"],
)
def test_corrupt_index_is_moved_aside_and_rebuilt(workspace: Path, damage) -> None:  # type: ignore[no-untyped-def]
    write(workspace, "memory/a.md", "phoenix rises from ashes\n")
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        mem.sync()
        path = mem.index.path
    mem.index.store().conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    mem.close()
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    damage(path)
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        results = mem.search("phoenix").results
        assert results and results[0].path == "memory/a.md"
        status = mem.status()
    assert status["files"] == 2


def test_garbage_index_leaves_a_corrupt_copy(workspace: Path) -> None:
    write(workspace, "memory/a.md", "phoenix\n")
    state = workspace / ".memdir"
    (state / "index.sqlite").write_bytes(b"garbage" * 1000)
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        assert mem.search("phoenix").results
        assert any("moved to" in n for n in mem.status()["notes"])
    assert list(state.glob("index.sqlite.corrupt-*"))


def _make_readonly(path: Path) -> bool:
    """Make a folder unwritable, even for root when chattr works. False if impossible."""
    if os.geteuid() != 0:
        os.chmod(path, 0o555)
        return True
    if shutil.which("chattr") is None:
        return False
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
    return done.returncode == 0


def _undo_readonly(path: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True)
    os.chmod(path, 0o755)


def test_read_only_workspace_is_searchable(tmp_path: Path) -> None:
    root = tmp_path / "ro"
    write(root, "MEMORY.md", "# Memory\n- the answer is fortytwo\n")
    if not _make_readonly(root):
        pytest.skip("cannot make a folder read-only here")
    try:
        with Memory(root, embedder=FakeEmbedder()) as mem:
            results = mem.search("fortytwo").results
            status = mem.status()
        assert results and results[0].path == "MEMORY.md"
        assert "not writable" in " ".join(status["notes"])
        assert not (root / ".memdir").exists()
    finally:
        _undo_readonly(root)


# -- damage inside the file (issue 14) ----------------------------------------------------------


def _damaged_index(workspace: Path, files: int = 30) -> Path:
    for n in range(files):
        write(workspace, f"memory/n{n}.md", f"# note {n}\n" + f"line {n} about herons\n" * 80)
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        mem.sync()
    db = workspace / ".memdir" / "index.sqlite"
    import sqlite3

    sqlite3.connect(db).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
    size = db.stat().st_size
    with db.open("r+b") as fh:  # two pages in the middle, after the header and schema
        for page in (size // 4096 // 2, size // 4096 // 2 + 1):
            fh.seek(page * 4096)
            fh.write(b"\xa5" * 4096)
    return db


def test_salvage_cache_reads_what_is_left(workspace: Path) -> None:
    from memdir.index.sqlite.salvage import salvage_cache

    db = _damaged_index(workspace)
    rows = salvage_cache(db)
    assert len(rows) and rows.models and all(len(r) == 4 and r[0] for r in rows.vectors)
    assert len(salvage_cache(workspace / "missing.sqlite")) == 0


def test_a_damaged_file_found_by_a_write_is_replaced_and_rebuilt(workspace: Path) -> None:
    _damaged_index(workspace)
    write(workspace, "memory/new.md", "# new\nthe heron nests by the pond\n")
    embedder = FakeEmbedder()
    with Memory(workspace, embedder=embedder) as mem:
        report = mem.sync()
        assert report.added >= 30
        assert mem.search("heron nests pond").results[0].path == "memory/new.md"
        notes = mem.status()["notes"]
    assert any("damaged" in n and "memdir index --force" in n for n in notes)
    assert len(list((workspace / ".memdir").glob("index.sqlite.corrupt-*"))) == 1


def test_stale_rebuild_files_are_removed_and_live_ones_kept(workspace: Path) -> None:
    from memdir.index.sqlite.lifecycle import clean_stale_rebuilds

    state = workspace / ".memdir"
    proc = subprocess.Popen(["true"])
    proc.wait()
    dead = state / f"index.sqlite.rebuild-{proc.pid}"
    dead_wal = state / f"index.sqlite.rebuild-{proc.pid}-wal"
    mine = state / f"index.sqlite.rebuild-{os.getpid()}"
    for path in (dead, dead_wal, mine):
        path.write_bytes(b"x")
    assert sorted(clean_stale_rebuilds(state)) == sorted([dead.name, dead_wal.name])
    assert mine.exists()


def test_damaged_copies_are_kept_a_week_then_only_the_newest(workspace: Path) -> None:
    from memdir.index.sqlite.lifecycle import KEEP_CORRUPT, KEEP_CORRUPT_S

    state = workspace / ".memdir"
    old = time.time() - KEEP_CORRUPT_S - 60
    for stamp in range(1000, 1005):
        copy = state / f"index.sqlite.corrupt-{stamp}"
        copy.write_bytes(b"x")
        os.utime(copy, (old, old))
    (state / "index.sqlite.corrupt-1900").write_bytes(b"a recent copy")
    (state / "index.sqlite").write_bytes(b"not a database at all" * 100)
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        mem.search("anything")
    copies = sorted(p.name for p in state.glob("index.sqlite.corrupt-*"))
    week_old = [c for c in copies if c.removeprefix("index.sqlite.corrupt-").startswith("100")]
    assert len(week_old) == KEEP_CORRUPT and "index.sqlite.corrupt-1000" not in copies
    assert "index.sqlite.corrupt-1900" in copies  # younger than a week: never removed
    assert len(copies) == KEEP_CORRUPT + 2  # and the copy of the file just moved aside
