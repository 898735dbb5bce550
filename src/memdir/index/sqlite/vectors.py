"""Vector search of the SQLite index over its stored float32 blobs, behind one small interface
(:class:`SqliteVectorSearch`, chosen by ``[index] vector_backend``).

- ``numpy`` (default): exact cosine search over an in-memory matrix, reloaded only when the
  index generation changes. Measured faster than sqlite-vec here (docs/benchmarks.md).
- ``sqlite-vec``: exact search inside SQLite with ``vec_distance_cosine``; needs a SQLite that
  can load extensions (the ``vec`` extra brings ``sqlite-vec`` and
  ``pysqlite3-binary``). Both return the same top-k (a test proves it).

Vectors are L2-normalised when stored, so cosine similarity is a dot product.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from memdir.embeddings.base import Vectors
from memdir.errors import ProviderUnavailable
from memdir.extras import install_hint
from memdir.index.sqlite.store import SqliteStore


class SqliteVectorSearch(Protocol):
    """Finds the chunks of a SQLite index most similar to a query vector."""

    name: str

    def search(self, store: SqliteStore, query: Vectors, k: int) -> list[tuple[int, float]]:
        """``(seq, cosine similarity)`` of the ``k`` nearest chunks, best first."""
        ...

    def close(self) -> None: ...


class NumpyVectorSearch:
    """Exact search with numpy over all vectors, cached per index generation."""

    name = "numpy"

    def __init__(self) -> None:
        self._key: tuple[str, int] | None = None
        self._seqs: np.ndarray = np.zeros(0, dtype=np.int64)
        self._matrix: Vectors = np.zeros((0, 0), dtype=np.float32)

    def search(self, store: SqliteStore, query: Vectors, k: int) -> list[tuple[int, float]]:
        key = (str(store.path), store.generation())
        if key != self._key:
            self._seqs, self._matrix = store.all_vectors()
            self._key = key
        if k <= 0 or self._matrix.shape[0] == 0 or self._matrix.shape[1] != query.shape[-1]:
            return []
        scores = self._matrix @ query.astype(np.float32, copy=False)
        k = min(k, scores.shape[0])
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(self._seqs[i]), float(scores[i])) for i in top]

    def close(self) -> None:
        self._key = None


class SqliteVecSearch:
    """Exact search with sqlite-vec's ``vec_distance_cosine`` on a second, read-only connection."""

    name = "sqlite-vec"

    def __init__(self, path: Path) -> None:
        self._conn = _open_vec_connection(path)

    def search(self, store: SqliteStore, query: Vectors, k: int) -> list[tuple[int, float]]:
        if k <= 0:
            return []
        blob = np.ascontiguousarray(query, dtype=np.float32).tobytes()
        rows = self._conn.execute(
            "SELECT seq, vec_distance_cosine(embedding, ?) AS d FROM vectors "
            "WHERE length(embedding) = ? ORDER BY d, seq LIMIT ?",
            (blob, len(blob), k),
        ).fetchall()
        return [(int(seq), 1.0 - float(d)) for seq, d in rows]

    def close(self) -> None:
        self._conn.close()


def _open_vec_connection(path: Path) -> Any:
    try:
        import sqlite_vec
    except ImportError as exc:
        raise ProviderUnavailable(
            f"the sqlite-vec backend needs sqlite-vec: {install_hint('vec')}"
        ) from exc
    try:
        import pysqlite3.dbapi2 as sqlite_mod
    except ImportError:
        import sqlite3 as sqlite_mod
    conn = sqlite_mod.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    if not hasattr(conn, "enable_load_extension"):
        conn.close()
        raise ProviderUnavailable(
            "this Python's sqlite3 cannot load extensions; install a SQLite that can: "
            + install_hint("vec")
        )
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)
    return conn


def create_vector_search(backend: str, path: Path) -> SqliteVectorSearch:
    """Build the vector backend named in ``index.vector_backend`` (checked with the config).

    Raises:
        ProviderUnavailable: sqlite-vec cannot be loaded here.
    """
    return VECTOR_BACKENDS[backend](path)


VECTOR_BACKENDS: dict[str, Callable[[Path], SqliteVectorSearch]] = {
    "numpy": lambda path: NumpyVectorSearch(),
    "sqlite-vec": SqliteVecSearch,
}
