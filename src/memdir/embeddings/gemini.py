"""Embeddings from Google's Gemini API (Generative Language REST, ``batchEmbedContents``).

``POST {base}/models/{model}:batchEmbedContents`` with the key in the ``x-goog-api-key`` header
(never in the URL, so it cannot leak into logs or error messages) and a body of
``{"requests": [{"model": "models/<m>", "content": {"parts": [{"text": …}]}, "taskType": …}]}``,
answered with ``{"embeddings": [{"values": [...]}, ...]}`` in input order.

Documents are sent as ``RETRIEVAL_DOCUMENT`` and queries as ``RETRIEVAL_QUERY``: the model
embeds the two differently so that a question lands near the passage that answers it.

The API key is the argument (``embedding.api_key = "env:VAR"``), else ``$GEMINI_API_KEY``, else
``$GOOGLE_API_KEY``.
"""

from __future__ import annotations

import os
import time
from typing import Any
from urllib.parse import quote

import httpx

from memdir.embeddings.http import HTTPEmbedder, Sleep, expect_list
from memdir.errors import ProviderResponseError, ProviderUnavailable
from memdir.http import endpoint_url, is_local_url

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
DEFAULT_MODEL = "text-embedding-004"
#: Environment variables tried, in order, when no API key is given.
API_KEY_ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY")

#: Dimensions of Gemini's embedding models; others are measured by one probe request.
GEMINI_MODEL_DIMS = {
    "text-embedding-004": 768,
    "embedding-001": 768,
    "gemini-embedding-001": 3072,
}


class GeminiEmbedder(HTTPEmbedder):
    """Embeds with a Gemini embedding model.

    Args:
        base_url: the API root; empty or None means ``…googleapis.com/v1beta``.
        model: the model name, with or without ``models/``; None means ``text-embedding-004``.
        api_key: the key itself (not an ``env:`` reference); None means the environment.
        batch_tokens: estimated tokens per request at most.
        timeout: seconds allowed for connecting and for each read.
        max_retries: tries per request in all (429, 5xx and timeouts are retried).
        transport: an ``httpx`` transport, for tests.
        sleep: how to wait between tries; tests pass a recorder.

    Raises:
        ProviderUnavailable: no API key for a non-local endpoint.
        ConfigError: the base URL is not an http(s) URL.
    """

    provider = "gemini"
    known_dims = GEMINI_MODEL_DIMS
    max_batch_items = 100  # the API's limit of requests per batchEmbedContents call

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        *,
        batch_tokens: int = 8000,
        timeout: float = 30,
        max_retries: int = 3,
        transport: httpx.BaseTransport | None = None,
        sleep: Sleep = time.sleep,
    ) -> None:
        url = base_url or DEFAULT_BASE_URL
        key = api_key or next((os.environ[v] for v in API_KEY_ENV if os.environ.get(v)), "")
        if not key and not is_local_url(url):
            raise ProviderUnavailable(
                f"gemini embeddings need an API key: set {API_KEY_ENV[0]} (or "
                f'{API_KEY_ENV[1]}), or put api_key = "env:YOUR_VAR" under [embedding] in '
                f"your config.toml"
            )
        name = (model or DEFAULT_MODEL).removeprefix("models/")
        super().__init__(
            base_url=url,
            model=name,
            headers={"x-goog-api-key": key} if key else {},
            batch_tokens=batch_tokens,
            timeout=timeout,
            max_retries=max_retries,
            transport=transport,
            sleep=sleep,
        )
        self._url = endpoint_url(self.base_url, f"models/{quote(name, safe='')}:batchEmbedContents")

    def _embed_batch(self, texts: list[str], *, query: bool) -> list[Any]:
        task = "RETRIEVAL_QUERY" if query else "RETRIEVAL_DOCUMENT"
        requests = [
            {
                "model": f"models/{self.model_id}",
                "content": {"parts": [{"text": text}]},
                "taskType": task,
            }
            for text in texts
        ]
        body = self._post(self._url, {"requests": requests})
        embeddings = expect_list(
            body.get("embeddings") if isinstance(body, dict) else None,
            len(texts),
            what="embeddings",
            who=self._who,
        )
        rows: list[Any] = []
        for item in embeddings:
            values = item.get("values") if isinstance(item, dict) else None
            if not isinstance(values, list):
                raise ProviderResponseError(f"{self._who}: an embedding has no values list")
            rows.append(values)
        return rows
