"""Chunk vectors pooled from line embeddings (``chunking.pooling``), and the per-candidate
scores that let fusion see both legs (``vector_scores``, ``keyword_scores``).

Every test runs on each storage backend (``backend`` fixture).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memdir import FakeEmbedder
from memdir.config.settings import ChunkingConfig
from memdir.embeddings.base import l2_normalize
from memdir.errors import ConfigError
from memdir.index.base import KeywordQuery
from memdir.index.manager import index_identity
from memdir.index.sync import embedding_units, scoring_units, vector_key
from memdir.markdown.chunking import text_hash
from memdir.text import index_tokens, query_terms
from tests.helpers import write
from tests.index.conftest import Backend

#: How close a stored vector is to the one embedded: SQLite keeps float16 or centred int8
#: (memdir.index.sqlite.codec), PostgreSQL float32.
STORED_ATOL = 5e-3

LINES = [f"- note {i}: the {w} service runs on port {6000 + i}" for i, w in enumerate("abcdefghij")]
#: A daily log: its lines are cut in overlapping windows (other notes, one block a chunk).
NOTES = "memory/2026-11-20.md"


def _chunk_texts(mgr) -> list[str]:  # type: ignore[no-untyped-def]
    store = mgr.store()
    seqs, _ = store.all_vectors()
    return [row.text for row in store.chunks_by_seq([int(s) for s in seqs]).values()]


def _vectors(mgr, path: str) -> list[tuple[str, np.ndarray]]:  # type: ignore[no-untyped-def]
    store = mgr.store()
    seqs, _ = store.all_vectors()
    rows = store.chunks_by_seq([int(s) for s in seqs])
    chunks = sorted((r for r in rows.values() if r.path == path), key=lambda r: r.start_line)
    vecs = store.vectors_by_seq([c.seq for c in chunks])
    return [(c.text, vecs[c.seq]) for c in chunks]


def test_chunk_vector_is_the_normalised_mean_of_its_lines(
    backend: Backend, workspace: Path
) -> None:
    write(workspace, NOTES, "# Services\n\n" + "\n".join(LINES) + "\n")
    emb = FakeEmbedder()
    mgr = backend.manager(
        workspace, emb, chunking=ChunkingConfig(tokens=40, overlap=20, pooling="lines")
    )
    mgr.sync()
    chunks = _vectors(mgr, NOTES)
    assert len(chunks) > 2  # several overlapping chunks
    reference = FakeEmbedder()
    for text, vec in chunks:
        lines = [line for line in text.split("\n") if line.strip()]
        expected = l2_normalize(np.mean(reference.embed_documents(lines), axis=0))
        assert np.allclose(vec, expected, atol=STORED_ATOL), text


def test_overlapping_chunks_embed_each_distinct_line_once(
    backend: Backend, workspace: Path
) -> None:
    write(workspace, NOTES, "\n".join(LINES + LINES[:3]) + "\n")  # 3 repeats
    emb = FakeEmbedder()
    mgr = backend.manager(
        workspace, emb, chunking=ChunkingConfig(tokens=40, overlap=30, pooling="lines")
    )
    report = mgr.sync()
    assert report.embedded == mgr.store().counts()["chunks"] > len(LINES) / 2
    distinct = set(LINES)  # (the bare MEMORY.md template makes no chunk)
    assert sum(emb.calls) == len(distinct)  # each distinct line once, whatever the overlap


def test_editing_one_line_embeds_only_that_line(backend: Backend, workspace: Path) -> None:
    path = write(workspace, NOTES, "\n".join(LINES) + "\n")
    emb = FakeEmbedder()
    mgr = backend.manager(
        workspace, emb, chunking=ChunkingConfig(tokens=40, overlap=30, pooling="lines")
    )
    mgr.sync()
    before = sum(emb.calls)
    edited = [*LINES]
    edited[5] = "- note 5: the f service moved to kafka"
    path.write_text("\n".join(edited) + "\n", encoding="utf-8")
    report = mgr.sync()
    assert report.embedded >= 2  # every chunk holding the line has a new vector…
    assert sum(emb.calls) - before == 1  # …but the model ran on one line only


def test_chunk_pooling_embeds_the_chunk_text_whole(backend: Backend, workspace: Path) -> None:
    write(workspace, NOTES, "\n".join(LINES) + "\n")
    emb = FakeEmbedder()
    chunking = ChunkingConfig(tokens=40, overlap=20, pooling="chunk", line_vectors=False)
    mgr = backend.manager(workspace, emb, chunking=chunking)
    mgr.sync()
    reference = FakeEmbedder()
    for text, vec in _vectors(mgr, NOTES):
        assert np.allclose(vec, reference.embed_documents([text])[0], atol=STORED_ATOL)
    assert sum(emb.calls) == mgr.store().counts()["chunks"]


def test_line_vectors_cache_each_distinct_line_beside_whole_chunk_vectors(
    backend: Backend, workspace: Path
) -> None:
    write(workspace, NOTES, "\n".join(LINES + LINES[:2]) + "\n")  # 2 repeats
    emb = FakeEmbedder()
    on = ChunkingConfig(tokens=40, overlap=20, line_vectors=True)
    mgr = backend.manager(workspace, emb, chunking=on)
    mgr.sync()
    texts = _chunk_texts(mgr)
    units = {u for t in texts for u in scoring_units(t)}
    assert set(LINES) <= units
    assert sum(emb.calls) == len(set(texts)) + len(units)  # chunks whole, each line once
    reference = FakeEmbedder()
    for text, vec in _vectors(mgr, NOTES):  # chunk vectors are still whole
        assert np.allclose(vec, reference.embed_documents([text])[0], atol=1e-6)
    keys = [text_hash(line) for line in LINES]
    found = mgr.line_vectors([*keys, text_hash("a line that is nowhere")])
    assert set(found) == set(keys)
    for line, key in zip(LINES, keys, strict=True):
        assert np.allclose(found[key], reference.embed_documents([line])[0], atol=1e-6)


def test_turning_line_vectors_on_reindexes_without_reembedding_chunks(
    backend: Backend, workspace: Path
) -> None:
    write(workspace, NOTES, "\n".join(LINES) + "\n")
    emb = FakeEmbedder()
    off = ChunkingConfig(tokens=40, overlap=20, line_vectors=False)
    backend.manager(workspace, emb, chunking=off).sync()
    first = sum(emb.calls)
    on = ChunkingConfig(tokens=40, overlap=20, line_vectors=True)
    mgr = backend.manager(workspace, emb, chunking=on)
    assert not mgr.identity_matches()
    mgr.sync()
    units = {u for t in _chunk_texts(mgr) for u in scoring_units(t)}
    assert sum(emb.calls) - first == len(units)
    assert mgr.line_vectors([text_hash(LINES[3])])


def test_pooled_vectors_come_back_from_the_cache_after_a_rebuild(
    backend: Backend, workspace: Path
) -> None:
    write(workspace, NOTES, "\n".join(LINES) + "\n")
    emb = FakeEmbedder()
    mgr = backend.manager(
        workspace, emb, chunking=ChunkingConfig(tokens=40, overlap=20, pooling="lines")
    )
    mgr.sync()
    before = _vectors(mgr, NOTES)
    calls = sum(emb.calls)
    report = mgr.sync(force=True)
    assert sum(emb.calls) == calls  # nothing embedded again
    assert report.embedded == 0 and report.cache_hits == mgr.store().counts()["chunks"]
    after = _vectors(mgr, NOTES)
    assert all(np.allclose(a[1], b[1]) for a, b in zip(before, after, strict=True))


def test_pooling_is_part_of_the_index_identity_and_validated() -> None:
    emb = FakeEmbedder()
    lines = index_identity(emb, ChunkingConfig(pooling="lines"), schema=1)
    whole = index_identity(emb, ChunkingConfig(pooling="chunk"), schema=1)
    assert lines != whole and lines["pooling"] == "lines"
    with pytest.raises(ConfigError, match="pooling"):
        ChunkingConfig(pooling="max")
    assert vector_key("abc", "chunk") == "abc" != vector_key("abc", "lines")


def test_embedding_units_are_the_non_blank_lines() -> None:
    assert embedding_units("# Title\n\n  - one  \n- two\n") == ["# Title", "- one", "- two"]
    assert embedding_units("   ") == ["   "]  # never empty


def test_vector_and_keyword_scores_of_chosen_chunks(backend: Backend, workspace: Path) -> None:
    write(workspace, "memory/a.md", "redis listens on port 6380\n")
    write(workspace, "memory/b.md", "postgres is the main database\n")
    emb = FakeEmbedder()
    mgr = backend.manager(workspace, emb)
    mgr.sync()
    seqs, _ = mgr.store().all_vectors()
    rows = {r.path: r for r in mgr.store().chunks_by_seq([int(s) for s in seqs]).values()}
    a, b = rows["memory/a.md"], rows["memory/b.md"]
    query = emb.embed_query("redis port")
    sims = mgr.vector_scores(query, [a.seq, b.seq])
    nearest = dict(mgr.vector_search(query, 10))
    assert sims[a.seq] == pytest.approx(nearest[a.seq], abs=1e-6)
    assert sims[b.seq] == pytest.approx(nearest[b.seq], abs=1e-6)
    terms = query_terms("redis port")
    keywords = KeywordQuery(tuple(terms))
    tokens = {a.seq: index_tokens(a.text), b.seq: index_tokens(b.text)}
    scores = mgr.keyword_scores(keywords, tokens)
    searched = dict(mgr.keyword_search(keywords, 10))
    assert scores[a.seq] == pytest.approx(searched[a.seq]) and scores[a.seq] > 0
    assert scores[b.seq] == 0.0
    assert mgr.vector_scores(query, []) == {} and mgr.keyword_scores(keywords, {}) == {}


def test_a_one_line_chunk_is_not_embedded_twice_for_its_line(
    backend: Backend, workspace: Path
) -> None:
    long_line = " ".join(f"word{i}" for i in range(60))  # one line, several chunks' worth
    write(workspace, "memory/long.md", long_line + "\n")
    emb = FakeEmbedder()
    on = ChunkingConfig(tokens=40, overlap=10, line_vectors=True)
    mgr = backend.manager(workspace, emb, chunking=on)
    mgr.sync()
    texts = _chunk_texts(mgr)
    pieces = [t for t in texts if t in long_line]
    assert len(pieces) >= 2  # the long line was cut into pieces, each a one-line chunk
    units = {u for t in texts for u in scoring_units(t)}
    assert not units & set(pieces)  # a piece is scored with its chunk's own vector
    assert sum(emb.calls) == len(set(texts)) + len(units)
