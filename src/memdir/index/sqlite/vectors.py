"""Vector search of the SQLite index (docs/design.md#vector-search).

:class:`NumpyVectorSearch`: exact cosine search over all the chunks' vectors, decoded from
their compact stored form (:mod:`memdir.index.sqlite.codec`) into one in-memory matrix. When
the index generation changes (a note was written, a chunk embedded), the matrix is brought up
to date, not reloaded: the chunks' (seq, vector id) pairs are read and compared, and only the
vectors of new or changed chunks are decoded. So a search right after an edit costs one read of
those pairs, not of every vector.

``[index] vector_backend = "sqlite-vec"`` is still accepted for old configs and uses the same
search: sqlite-vec scanned float32 rows in SQLite (14× slower than numpy at 111k vectors), and
the vectors are no longer stored as float32.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import numpy as np

from memdir.embeddings.base import Vectors
from memdir.errors import ConfigError
from memdir.index.sqlite.store import SqliteStore


class SqliteVectorSearch(Protocol):
    """Finds the chunks of a SQLite index most similar to a query vector."""

    name: str

    def search(self, store: SqliteStore, query: Vectors, k: int) -> list[tuple[int, float]]:
        """``(seq, cosine similarity)`` of the ``k`` nearest chunks, best first."""
        ...

    def warm(self, store: SqliteStore) -> None:
        """Bring what a search reads in step with ``store`` now, so the next search need not."""
        ...

    def close(self) -> None: ...


class NumpyVectorSearch:
    """Exact search with numpy over all vectors, cached per index generation."""

    name = "numpy"

    def __init__(self) -> None:
        self._key: tuple[str, int] | None = None
        self._seqs: np.ndarray = np.zeros(0, dtype=np.int64)
        self._ids: np.ndarray = np.zeros(0, dtype=np.int64)
        self._matrix: Vectors = np.zeros((0, 0), dtype=np.float32)

    def search(self, store: SqliteStore, query: Vectors, k: int) -> list[tuple[int, float]]:
        self.warm(store)
        if k <= 0 or self._matrix.shape[0] == 0 or self._matrix.shape[1] != query.shape[-1]:
            return []
        scores = self._matrix @ np.asarray(query, dtype=np.float32)
        k = min(k, scores.shape[0])
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.lexsort((self._seqs[top], -scores[top]))]
        return [(int(self._seqs[i]), float(scores[i])) for i in top]

    def warm(self, store: SqliteStore) -> None:
        key = (str(store.path), store.generation())
        if key != self._key:
            self._update(store, same_file=self._key is not None and self._key[0] == key[0])
            self._key = key

    def _update(self, store: SqliteStore, *, same_file: bool) -> None:
        """Bring the matrix in step with ``store``: keep the rows whose (seq, vector id) did
        not change, decode the others."""
        seqs, ids = store.vector_links()
        if not same_file or self._matrix.shape[0] == 0 or len(seqs) == 0:
            self._seqs, self._ids = seqs, ids
            self._matrix = store.vectors_by_id(ids) if len(ids) else np.zeros((0, 0), np.float32)
            return
        # Both sorted by seq: a row is kept when the same seq points at the same vector.
        pos = np.searchsorted(self._seqs, seqs)
        pos = np.minimum(pos, len(self._seqs) - 1)
        kept = (self._seqs[pos] == seqs) & (self._ids[pos] == ids)
        matrix = np.empty((len(seqs), self._matrix.shape[1]), dtype=np.float32)
        matrix[kept] = self._matrix[pos[kept]]
        fresh = ~kept
        if fresh.any():
            matrix[fresh] = store.vectors_by_id(ids[fresh])
        self._seqs, self._ids, self._matrix = seqs, ids, matrix

    def close(self) -> None:
        self._key = None


def create_vector_search(backend: str, path: Path) -> SqliteVectorSearch:
    """Build the vector backend named in ``index.vector_backend``.

    Raises:
        ConfigError: unknown backend name.
    """
    factory = VECTOR_BACKENDS.get(backend)
    if factory is None:
        raise ConfigError(
            f"unknown vector backend {backend!r}: choose one of {', '.join(VECTOR_BACKENDS)}"
        )
    return factory(path)


VECTOR_BACKENDS: dict[str, Callable[[Path], SqliteVectorSearch]] = {
    "numpy": lambda path: NumpyVectorSearch(),
    "sqlite-vec": lambda path: NumpyVectorSearch(),
}
