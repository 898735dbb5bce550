"""Embeddings from a local (or remote) Ollama server through its ``/api/embed`` endpoint.

``POST {base_url}/api/embed`` with ``{"model": …, "input": [...]}`` is answered with
``{"embeddings": [[...], ...]}`` in input order. No API key. The base URL is the argument
(``embedding.base_url``), else ``$OLLAMA_HOST`` (``host:port`` is accepted, as Ollama's own CLI
accepts it), else ``http://127.0.0.1:11434``. Pull the model first: ``ollama pull <model>``.
"""

from __future__ import annotations

import os
import time
from typing import Any

import httpx

from memdir.embeddings.http import HTTPEmbedder, Sleep, expect_list
from memdir.http import endpoint_url

DEFAULT_BASE_URL = "http://127.0.0.1:11434"
DEFAULT_MODEL = "nomic-embed-text"
DEFAULT_PORT = 11434
HOST_ENV = "OLLAMA_HOST"

#: Dimensions of common Ollama embedding models; others are measured by one probe request.
OLLAMA_MODEL_DIMS = {
    "nomic-embed-text": 768,
    "mxbai-embed-large": 1024,
    "all-minilm": 384,
    "snowflake-arctic-embed": 1024,
    "bge-m3": 1024,
}


class OllamaEmbedder(HTTPEmbedder):
    """Embeds with a model served by Ollama.

    Args:
        base_url: the server root; empty or None means ``$OLLAMA_HOST``, then localhost.
        model: the model name (``nomic-embed-text``, ``bge-m3:latest``, …).
        batch_tokens: estimated tokens per request at most.
        timeout: seconds allowed for connecting and for each read (a cold model loads slowly).
        max_retries: tries per request in all (429, 5xx and timeouts are retried).
        transport: an ``httpx`` transport, for tests.
        sleep: how to wait between tries; tests pass a recorder.

    Raises:
        ConfigError: the base URL is not an http(s) URL.
    """

    provider = "ollama"
    known_dims = OLLAMA_MODEL_DIMS

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        *,
        batch_tokens: int = 8000,
        timeout: float = 30,
        max_retries: int = 3,
        transport: httpx.BaseTransport | None = None,
        sleep: Sleep = time.sleep,
    ) -> None:
        url = base_url or _host_from_env() or DEFAULT_BASE_URL
        name = model or DEFAULT_MODEL
        super().__init__(
            base_url=url,
            model=name,
            headers={},
            batch_tokens=batch_tokens,
            timeout=timeout,
            max_retries=max_retries,
            transport=transport,
            sleep=sleep,
        )
        if name.endswith(":latest"):
            # "nomic-embed-text:latest" is the same model as "nomic-embed-text".
            self._dims = self._dims or self.known_dims.get(name.removesuffix(":latest"))
        self._url = endpoint_url(self.base_url, "api/embed")

    def _embed_batch(self, texts: list[str], *, query: bool) -> list[Any]:
        body = self._post(self._url, {"model": self.model_id, "input": texts})
        return expect_list(
            body.get("embeddings") if isinstance(body, dict) else None,
            len(texts),
            what="embeddings",
            who=self._who,
        )


def _host_from_env() -> str:
    """``$OLLAMA_HOST`` as a URL: a scheme and the default port are added when missing."""
    host = os.environ.get(HOST_ENV, "").strip()
    if not host:
        return ""
    if "://" not in host:
        host = "http://" + host
    scheme, _, rest = host.partition("://")
    netloc, slash, path = rest.partition("/")
    hostname = netloc.rsplit("]", 1)[-1]  # an IPv6 literal's colons are not a port
    if ":" not in hostname and scheme == "http":  # https keeps its own port, 443
        netloc = f"{netloc}:{DEFAULT_PORT}"
    return f"{scheme}://{netloc}{slash}{path}"
