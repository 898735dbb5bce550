"""Chunk texts kept once per file (memdir.index.sqlite.bodies): a file's body gives every chunk's
text back exactly, for both chunkers, with overlap, long lines cut into pieces, CJK and CRLF;
what it cannot give back is named, and the store then keeps that chunk's own text."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memdir import Memory
from memdir.index.sqlite.bodies import chunk_text, file_body
from memdir.index.sqlite.fts import inflate_text
from memdir.index.sqlite.store import SqliteStore
from memdir.markdown.chunking import Chunk, chunk_markdown
from memdir.markdown.greedy import chunk_greedy
from tests.helpers import write

WORDS = ["alpha", "beta", "会议纪要", "分布式锁", "# Heading", "", "- item", "Redis 端口 6379。"]


def _texts(n: int) -> list[str]:
    rng = random.Random(7)
    words = [*WORDS, "x" * 900 + ". " + "y" * 700, "长" * 500 + "。" + "短" * 300]
    out = []
    for _ in range(n):
        lines = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 12))) for _ in range(60)]
        text = "\n".join(lines[: rng.randint(0, 60)])
        out.append(text.replace("\n", "\r\n") if rng.random() < 0.2 else text + "\n")
    return out


@pytest.mark.parametrize("chunker", [chunk_markdown, chunk_greedy])
@pytest.mark.parametrize(("tokens", "overlap"), [(200, 120), (50, 0), (400, 80)])
def test_the_body_gives_every_chunk_back(chunker, tokens: int, overlap: int) -> None:  # type: ignore[no-untyped-def]
    for text in _texts(40):
        chunks = chunker(text, max_tokens=tokens, overlap_tokens=overlap)
        body, wrong = file_body(chunks)
        assert wrong == set()
        lines = body.split("\n")
        for c in chunks:
            assert chunk_text(lines, c.start_line, c.end_line, c.start_col, c.end_col) == c.text
        # the body holds each covered line once, not once per chunk
        assert len(body) <= len(text)


def test_a_chunk_the_body_cannot_give_back_is_named() -> None:
    good = Chunk(1, 2, "one\ntwo")
    odd = Chunk(2, 2, "TWO")  # disagrees with the line the other chunk covers
    body, wrong = file_body([good, odd])
    assert len(wrong) == 1  # one of the two: the body holds one text per line
    kept = ({0, 1} - wrong).pop()
    assert chunk_text(body.split("\n"), 2, 2, 0, None) == ("two" if kept == 0 else "TWO")


def test_the_store_reads_texts_from_bodies(workspace: Path) -> None:
    long = "第一句。" * 400
    a, b = "memory/2026-11-01.md", "memory/2026-11-02.md"  # daily logs: windows that overlap
    write(workspace, a, "# title\n\n" + "\n".join(f"- line {i}" for i in range(90)))
    write(workspace, b, f"intro\n{long}\nend\n")
    with Memory(workspace) as mem:
        mem.sync()
        store = mem.index.store()
        assert isinstance(store, SqliteStore)
        stored = store.conn.execute("SELECT count(*) FROM chunks WHERE text IS NOT NULL")
        assert stored.fetchone()[0] == 0
        rows = store.chunks_by_seq([r[0] for r in store.conn.execute("SELECT seq FROM chunks")])
        assert len(rows) > 5
        expected = {}
        for name in (a, b):
            for c in chunk_markdown(
                (workspace / name).read_text(), max_tokens=200, overlap_tokens=120
            ):
                expected[(name, c.start_line, c.end_line, c.text)] = True
        for row in rows.values():
            assert (row.path, row.start_line, row.end_line, row.text) in expected


def test_structured_chunks_keep_their_text_and_the_body_does_not_repeat_it(
    workspace: Path,
) -> None:
    text = "# People\n\n## Kafka\n- owner: Tomás\n- on call: Priya\n\n## Redis\n- port 6380\n"
    write(workspace, "memory/people.md", text)
    with Memory(workspace) as mem:
        mem.sync()
        store = mem.index.store()
        assert isinstance(store, SqliteStore)
        seqs = [r[0] for r in store.conn.execute("SELECT seq FROM chunks")]
        rows = sorted(store.chunks_by_seq(seqs).values(), key=lambda r: r.start_line)
        assert [(r.start_line, r.text) for r in rows] == [
            (4, "# People\n## Kafka\n- owner: Tomás\n- on call: Priya"),  # packed
            (8, "# People\n## Redis\n- port 6380"),
        ]
        [body] = store.conn.execute("SELECT body FROM files WHERE path = 'memory/people.md'")
        assert "Tomás" not in inflate_text(body[0])  # kept once, with its chunk


def test_a_chunk_whose_file_changed_between_the_reads_is_left_out(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(workspace, "memory/a.md", "the heron nests by the pond\n")
    with Memory(workspace) as mem:
        mem.sync()
        store = mem.index.store()
        assert isinstance(store, SqliteStore)
        seqs = [r[0] for r in store.conn.execute("SELECT seq FROM chunks")]
        assert all(row.text for row in store.chunks_by_seq(seqs).values())
        # the files' bodies read after the chunks: another process re-indexed them meanwhile
        monkeypatch.setattr(store, "_bodies", lambda keys: {})
        assert store.chunks_by_seq(seqs) == {}
