"""The Embedder protocol and helpers every provider shares."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol, cast, runtime_checkable

import numpy as np
import numpy.typing as npt

from memdir.errors import ProviderResponseError
from memdir.text import estimate_tokens

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns text into L2-normalised float32 vectors.

    Attributes:
        provider: registry name (``local``, ``openai``, …); part of the embedding cache key.
        model_id: the model's name; part of the index identity and the cache key.
        provider_key: distinguishes endpoints serving the same model name (e.g. a hash of the
            base URL); part of the cache key. Empty for local models.
        dims: vector dimension.
    """

    provider: str
    model_id: str
    provider_key: str
    dims: int

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Embed texts to store; returns an array of shape ``(len(texts), dims)``."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """Embed a search query; returns an array of shape ``(dims,)``."""
        ...


@runtime_checkable
class UrgentDocuments(Protocol):
    """An embedder that can embed a few documents at once, beside a long batch already running
    (the background embedder's), instead of queueing behind it: a search's candidates that
    have no vector yet, a fact just written (docs/design.md#index, "Freshness")."""

    def embed_documents_urgently(self, texts: Sequence[str]) -> Vectors:
        """Embed a few texts now, as :meth:`Embedder.embed_documents` would."""
        ...


class _Urgent:
    """``embedder`` seen as an :class:`Embedder` whose documents skip the queue."""

    def __init__(self, inner: Embedder, urgent: UrgentDocuments) -> None:
        self._inner = inner
        self._urgent = urgent
        self.provider = inner.provider
        self.model_id = inner.model_id
        self.provider_key = inner.provider_key
        self.dims = inner.dims

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._urgent.embed_documents_urgently(texts)

    def embed_query(self, text: str) -> Vectors:
        return self._inner.embed_query(text)


def urgent_embedder(embedder: Embedder) -> Embedder:
    """``embedder`` for a few documents needed now: its urgent path where it has one
    (:class:`UrgentDocuments`), else itself (a remote provider takes requests side by side)."""
    if isinstance(embedder, UrgentDocuments):
        return _Urgent(embedder, embedder)
    return embedder


def l2_normalize(vectors: npt.ArrayLike) -> Vectors:
    """Return float32 rows scaled to unit length (zero rows stay zero)."""
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim == 1:
        norm = float(np.linalg.norm(arr))
        return cast(Vectors, arr / norm) if norm > 0 else arr
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return cast(Vectors, (arr / norms).astype(np.float32, copy=False))


def check_dims(vectors: Vectors, expected_rows: int, dims: int, *, who: str) -> Vectors:
    """Raise a clear error unless ``vectors`` is ``(expected_rows, dims)``."""
    if vectors.ndim != 2 or vectors.shape[0] != expected_rows or vectors.shape[1] != dims:
        raise ProviderResponseError(
            f"{who} returned vectors of shape {tuple(vectors.shape)}, expected "
            f"({expected_rows}, {dims}); check the model name and its dimensions"
        )
    if not np.all(np.isfinite(vectors)):
        raise ProviderResponseError(f"{who} returned vectors with NaN or infinite values")
    return vectors


def token_batches(texts: Sequence[str], max_tokens: int) -> Iterator[tuple[int, int]]:
    """Yield ``(start, end)`` index ranges whose estimated tokens stay within ``max_tokens``.

    A single text larger than the budget gets a batch of its own.
    """
    start = 0
    total = 0
    for i, text in enumerate(texts):
        tokens = estimate_tokens(text)
        if i > start and total + tokens > max_tokens:
            yield start, i
            start, total = i, 0
        total += tokens
    if start < len(texts):
        yield start, len(texts)
