"""The base of every remote embedder (OpenAI-compatible, Ollama, Gemini): :class:`HTTPEmbedder`
batches by estimated tokens, discovers the vector dimension lazily, checks shapes and
L2-normalises; a provider only says how to turn one batch of texts into rows of floats. The
requests themselves go through :func:`memdir.http.post_json` (retries, redacted errors).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import httpx
import numpy as np

from memdir.embeddings.base import Vectors, check_dims, l2_normalize, token_batches
from memdir.errors import ProviderResponseError
from memdir.http import Sleep, normalize_base_url, post_json, provider_key_for

__all__ = ["HTTPEmbedder", "Sleep", "expect_list"]


class HTTPEmbedder:
    """Base of the remote embedders: batching, dimension discovery, checks and normalisation.

    Subclasses set :attr:`provider`, :attr:`known_dims` and :attr:`max_batch_items`, and
    implement :meth:`_embed_batch` (one request for one batch of texts).

    Args:
        base_url: the endpoint's base URL (already defaulted by the subclass).
        model: the model name sent to the server.
        headers: headers for every request (auth included; never shown in errors).
        batch_tokens: estimated tokens per request at most (one longer text goes alone).
        timeout: seconds allowed for connecting and for each read.
        max_retries: tries per request in all, see :func:`post_json`.
        transport: an ``httpx`` transport, for tests (``httpx.MockTransport``) or proxies.
        sleep: how to wait between tries; tests pass a recorder.
    """

    provider: str = "http"
    #: Dimensions of well-known models, so ``dims`` needs no request for them.
    known_dims: Mapping[str, int] = {}
    #: Most texts one request may carry (the server's own limit).
    max_batch_items: int = 2048
    #: A short text embedded once when the dimension of an unknown model is needed.
    probe_text: str = "dimension probe"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        headers: Mapping[str, str],
        batch_tokens: int,
        timeout: float,
        max_retries: int,
        transport: httpx.BaseTransport | None,
        sleep: Sleep,
    ) -> None:
        self.base_url = normalize_base_url(base_url)
        self.model_id = model
        self.provider_key = provider_key_for(self.base_url)
        self.batch_tokens = max(1, batch_tokens)
        self.timeout = timeout
        self.max_retries = max_retries
        self._headers = dict(headers)
        self._sleep = sleep
        self._client = httpx.Client(transport=transport, timeout=timeout)
        self._dims: int | None = self.known_dims.get(model)

    @property
    def dims(self) -> int:
        """The vector dimension: known for common models, else learned from one probe request."""
        if self._dims is None:
            rows = self._embed_batch([self.probe_text], query=False)
            self._dims = self._width(rows)
        return self._dims

    @dims.setter
    def dims(self, value: int) -> None:
        self._dims = int(value)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Embed texts to store; returns ``(len(texts), dims)`` unit-length float32 rows."""
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        parts = [
            self._embed_checked(list(texts[start:end]), query=False)
            for start, end in self._batches(texts)
        ]
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)

    def embed_query(self, text: str) -> Vectors:
        """Embed a search query; returns a ``(dims,)`` unit-length float32 vector."""
        return self._embed_checked([text], query=True).reshape(-1)

    def close(self) -> None:
        """Close the HTTP connections (the embedder cannot be used afterwards)."""
        self._client.close()

    def _embed_batch(self, texts: list[str], *, query: bool) -> list[Any]:
        """Send one request; return one row of numbers per text, in input order."""
        raise NotImplementedError

    @property
    def _who(self) -> str:
        return f"{self.provider} embeddings"

    def _post(self, url: str, payload: Mapping[str, Any]) -> Any:
        return post_json(
            self._client,
            url,
            payload,
            self._headers,
            who=self._who,
            timeout=self.timeout,
            max_retries=self.max_retries,
            sleep=self._sleep,
        )

    def _batches(self, texts: Sequence[str]) -> Iterator[tuple[int, int]]:
        for start, end in token_batches(texts, self.batch_tokens):
            for sub in range(start, end, self.max_batch_items):
                yield sub, min(sub + self.max_batch_items, end)

    def _embed_checked(self, texts: list[str], *, query: bool) -> Vectors:
        rows = self._embed_batch(texts, query=query)
        if self._dims is None:
            # The first real answer tells the dimension: no separate probe request.
            self._dims = self._width(rows)
        vectors = self._as_array(rows)
        check_dims(vectors, len(texts), self._dims, who=f"{self._who} ({self.model_id})")
        return l2_normalize(vectors)

    def _as_array(self, rows: list[Any]) -> Vectors:
        try:
            if not all(isinstance(row, list) for row in rows):
                raise TypeError("a vector is not a list")
            vectors: Vectors = np.asarray(rows, dtype=np.float32)
            return vectors
        except (TypeError, ValueError) as exc:
            raise ProviderResponseError(
                f"{self._who} ({self.model_id}) returned vectors that are not equal-length "
                f"lists of numbers"
            ) from exc

    def _width(self, rows: list[Any]) -> int:
        vectors = self._as_array(rows)
        if vectors.ndim != 2 or vectors.shape[1] == 0:
            raise ProviderResponseError(
                f"{self._who} ({self.model_id}) returned vectors of shape "
                f"{tuple(vectors.shape)}; expected one non-empty vector per text"
            )
        return int(vectors.shape[1])


def expect_list(value: Any, length: int, *, what: str, who: str) -> list[Any]:
    """Return ``value`` if it is a list of ``length`` items, else raise a clear error."""
    if not isinstance(value, list):
        raise ProviderResponseError(f"{who}: the answer has no {what} list")
    if len(value) != length:
        raise ProviderResponseError(f"{who}: the answer has {len(value)} {what} for {length} texts")
    return value
