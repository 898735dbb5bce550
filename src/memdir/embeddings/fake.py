"""A deterministic embedder for tests: a hashed bag of words, no model, no network.

Texts sharing words get similar vectors, so hybrid search behaves sensibly in tests. Shipped in
the package (like ``httpx.MockTransport``) so users can test their own code against memdir.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from memdir.embeddings.base import Vectors, l2_normalize
from memdir.errors import ProviderResponseError
from memdir.text import similarity_tokens


class FakeEmbedder:
    """Deterministic hashed bag-of-words vectors.

    Args:
        dims: vector dimension.
        fail_with: if set, every call raises :class:`ProviderResponseError` with this message
            (to test how callers survive a broken provider).
    """

    provider = "fake"
    provider_key = ""

    def __init__(self, dims: int = 64, *, fail_with: str | None = None) -> None:
        self.dims = dims
        self.model_id = f"fake-bow-{dims}"
        self.fail_with = fail_with
        self.calls: list[int] = []  # batch sizes of embed_documents, for tests

    def _vector(self, text: str) -> Vectors:
        vec = np.zeros(self.dims, dtype=np.float32)
        for token in similarity_tokens(text):
            digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % self.dims
            sign = 1.0 if digest[4] & 1 else -1.0
            vec[index] += sign
        if not vec.any():
            vec[0] = 1.0
        return l2_normalize(vec)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if self.fail_with:
            raise ProviderResponseError(self.fail_with)
        self.calls.append(len(texts))
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        return np.stack([self._vector(t) for t in texts])

    def embed_query(self, text: str) -> Vectors:
        if self.fail_with:
            raise ProviderResponseError(self.fail_with)
        return self._vector(text)
