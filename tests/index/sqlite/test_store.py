"""The SQLite store of schema 2: counters kept in ``meta`` match the rows after every kind of
write, each vector is stored once (the index and the embedding cache are one table), and the
compact format keeps the float32 ranking (docs/design.md#vector-search)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np

from memdir import FakeEmbedder
from memdir.index.manager import IndexManager
from memdir.index.sqlite.codec import decode, encode
from memdir.index.sqlite.store import SqliteStore
from memdir.workspace.layout import Workspace
from tests.helpers import write


def _real_counts(store: SqliteStore) -> dict[str, int]:
    """What the counters should say, counted from the rows themselves."""
    conn: sqlite3.Connection = store.conn

    def one(sql: str) -> int:
        return int(conn.execute(sql).fetchone()[0] or 0)

    return {
        "files": one("SELECT count(*) FROM files"),
        "chunks": one("SELECT count(*) FROM chunks"),
        "vectors": one("SELECT count(*) FROM chunks WHERE vector IS NOT NULL"),
        "pending_vectors": one(
            "SELECT count(*) FROM chunks WHERE vector IS NULL AND embeddable = 1"
        ),
        "cached_embeddings": one("SELECT count(*) FROM embeddings"),
        "companion_codes": one("SELECT count(*) FROM companion"),
    }


def _check(mgr: IndexManager) -> dict[str, int]:
    store = mgr.store()
    assert isinstance(store, SqliteStore)
    counts = store.counts()
    assert counts == _real_counts(store)
    tokens = int(store.conn.execute("SELECT sum(token_count) FROM chunks").fetchone()[0] or 0)
    stats = store.corpus_stats()
    assert stats.documents == counts["chunks"]
    assert store.counter("tokens") == tokens
    assert stats.avg_length == (tokens / counts["chunks"] if counts["chunks"] else 0.0)
    return counts


def test_counters_follow_add_edit_delete_and_embedding(workspace: Path) -> None:
    for i in range(12):
        write(workspace, f"memory/n{i}.md", f"# note {i}\nthe otter {i} swims\n\nmore {i}\n")
    embedder = FakeEmbedder()
    mgr = IndexManager(Workspace(workspace), embedder=embedder)
    mgr.sync()
    first = _check(mgr)
    assert first["files"] == 13 and first["pending_vectors"] == 0

    write(workspace, "memory/n3.md", "# note 3\nthe otter 3 now dives instead\n")  # edit
    write(workspace, "memory/new.md", "a new note about herons\n")  # add
    (workspace / "memory" / "n5.md").unlink()  # delete
    (workspace / "memory" / "n6.md").rename(workspace / "memory" / "renamed.md")  # rename
    mgr.refresh()
    assert _check(mgr)["files"] == 13

    mgr.embedder = FakeEmbedder(fail_with="down")  # the provider fails: chunks stay pending
    write(workspace, "memory/later.md", "written while the provider was down\n")
    mgr.sync()
    pending = _check(mgr)
    assert pending["files"] == 14 and pending["pending_vectors"] > 0

    mgr.embedder = embedder
    mgr.sync()  # embeds them
    done = _check(mgr)
    assert done["pending_vectors"] == 0 and done["vectors"] == done["chunks"]
    mgr.close()


def test_each_text_is_embedded_and_stored_once(workspace: Path) -> None:
    same = "the same line in many notes\n"
    for i in range(6):
        write(workspace, f"memory/copy{i}.md", same)
    write(workspace, "memory/other.md", "something else entirely\n")
    embedder = FakeEmbedder()
    mgr = IndexManager(Workspace(workspace), embedder=embedder)
    mgr.sync()
    store = mgr.store()
    assert isinstance(store, SqliteStore)
    counts = _check(mgr)
    # Six chunks share one vector row; the model saw their text once.
    shared = store.conn.execute(
        "SELECT count(DISTINCT vector), count(*) FROM chunks c JOIN files f ON f.id = c.file "
        "WHERE f.path LIKE 'memory/copy%'"
    ).fetchone()
    assert tuple(shared) == (1, 6)
    assert sum(embedder.calls) == counts["cached_embeddings"] < counts["chunks"]
    # No second copy of any vector anywhere in the file.
    tables = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master")}
    assert not tables & {"vectors", "embedding_cache"}

    # A rebuild takes every vector from the table it keeps: nothing is embedded again.
    before = sum(embedder.calls)
    mgr.sync(force=True)
    assert sum(embedder.calls) == before
    assert _check(mgr)["vectors"] == counts["vectors"]
    mgr.close()


def test_int8_storage_keeps_the_float32_top_k() -> None:
    # Vectors with a shared component and clusters, as real embeddings of one model have.
    rng = np.random.default_rng(11)
    dims, n, k = 384, 3000, 24
    common = rng.standard_normal(dims)
    topics = rng.standard_normal((40, dims))
    rows = common + topics[rng.integers(0, 40, n)] * 0.6 + rng.standard_normal((n, dims)) * 0.5
    vectors = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    centre = vectors[:64].mean(axis=0)
    stored = decode(encode(vectors, centre), dims, centre)
    assert np.max(np.abs(np.sum(stored * vectors, axis=1) - 1.0)) < 1e-3
    recalls = []
    for q in range(50):
        query = vectors[q] + rng.standard_normal(dims).astype(np.float32) * 0.3
        query /= np.linalg.norm(query)
        exact = set(np.argsort(-(vectors @ query))[:k].tolist())
        approx = set(np.argsort(-(stored @ query))[:k].tolist())
        recalls.append(len(exact & approx) / k)
    assert float(np.mean(recalls)) >= 0.97
