"""Vector search of the SQLite index (docs/design.md#vector-search).

:class:`NumpyVectorSearch`: exact cosine search over all the chunks' vectors, decoded from
their compact stored form (:mod:`memdir.index.sqlite.codec`) into one in-memory matrix that is
reloaded only when the index generation changes. Decoding is vectorised, so a reload costs
about one read of the ``embeddings`` rows the chunks point at.

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
        scores = self._matrix @ np.asarray(query, dtype=np.float32)
        k = min(k, scores.shape[0])
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.lexsort((self._seqs[top], -scores[top]))]
        return [(int(self._seqs[i]), float(scores[i])) for i in top]

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
