"""Embeddings from any OpenAI-compatible ``/embeddings`` endpoint.

That covers OpenAI itself, Azure OpenAI, vLLM, LM Studio, llama.cpp's server, DashScope and
others: ``POST {base_url}/embeddings`` with ``{"model": …, "input": [...]}``, answered with
``{"data": [{"index": i, "embedding": [...]}, ...]}``.

Where settings come from, first found wins:

- base URL: the argument (``embedding.base_url``), ``$MEMDIR_EMBEDDING_BASE_URL``,
  ``$OPENAI_BASE_URL``, then ``https://api.openai.com/v1``;
- API key: the argument (``embedding.api_key = "env:VAR"``), then ``$OPENAI_API_KEY``. OpenAI's
  own endpoint needs one; a server on this machine or your network may run without.
"""

from __future__ import annotations

import os
import time
from typing import Any
from urllib.parse import urlsplit

import httpx

from memdir.embeddings.http import HTTPEmbedder, Sleep, expect_list
from memdir.errors import ProviderResponseError, ProviderUnavailable
from memdir.http import endpoint_url

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "text-embedding-3-small"
#: Environment variables tried, in order, when no base URL is given.
BASE_URL_ENV = ("MEMDIR_EMBEDDING_BASE_URL", "OPENAI_BASE_URL")
API_KEY_ENV = "OPENAI_API_KEY"

#: Dimensions of OpenAI's own models; any other model is measured by one probe request.
OPENAI_MODEL_DIMS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class OpenAIEmbedder(HTTPEmbedder):
    """Embeds through an OpenAI-compatible ``/embeddings`` endpoint.

    Args:
        base_url: the API root (``…/v1``); empty or None means the environment, then OpenAI.
        model: the model name; empty or None means ``text-embedding-3-small``.
        api_key: the key itself (not an ``env:`` reference); None means ``$OPENAI_API_KEY``.
        batch_tokens: estimated tokens per request at most.
        timeout: seconds allowed for connecting and for each read.
        max_retries: tries per request in all (429, 5xx and timeouts are retried).
        transport: an ``httpx`` transport, for tests.
        sleep: how to wait between tries; tests pass a recorder.

    Raises:
        ProviderUnavailable: OpenAI's own endpoint and no API key.
        ConfigError: the base URL is not an http(s) URL.
    """

    provider = "openai"
    known_dims = OPENAI_MODEL_DIMS
    max_batch_items = 2048  # OpenAI's limit of inputs per request

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
        url = base_url or _first_env(BASE_URL_ENV) or DEFAULT_BASE_URL
        key = api_key or os.environ.get(API_KEY_ENV, "")
        host = (urlsplit(url.strip()).hostname or "").lower()
        if not key and host == "api.openai.com":
            raise ProviderUnavailable(
                f"openai embeddings need an API key: set {API_KEY_ENV}, or put "
                f'api_key = "env:YOUR_VAR" under [embedding] in your config.toml'
            )
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        if key and host.endswith(".azure.com"):
            headers["api-key"] = key  # Azure's classic endpoints read this header instead
        super().__init__(
            base_url=url,
            model=model or DEFAULT_MODEL,
            headers=headers,
            batch_tokens=batch_tokens,
            timeout=timeout,
            max_retries=max_retries,
            transport=transport,
            sleep=sleep,
        )
        self._url = endpoint_url(self.base_url, "embeddings")

    def _embed_batch(self, texts: list[str], *, query: bool) -> list[Any]:
        body = self._post(self._url, {"model": self.model_id, "input": texts})
        data = expect_list(
            body.get("data") if isinstance(body, dict) else None,
            len(texts),
            what="data items",
            who=self._who,
        )
        by_index: dict[int, Any] = {}
        for item in data:
            index = item.get("index") if isinstance(item, dict) else None
            if not isinstance(index, int) or not 0 <= index < len(texts) or index in by_index:
                raise ProviderResponseError(
                    f"{self._who}: the answer's data items do not carry the indexes "
                    f"0..{len(texts) - 1} once each"
                )
            by_index[index] = item.get("embedding")
        # Servers may answer out of order; "index" says which input each vector belongs to.
        return [by_index[i] for i in range(len(texts))]


def _first_env(names: tuple[str, ...]) -> str:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return ""
