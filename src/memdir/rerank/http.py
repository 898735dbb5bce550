"""Rerank through any HTTP rerank endpoint.

Two request shapes, chosen by ``[rerank] api``:

- ``cohere`` (default): ``POST {base_url}/rerank`` with ``{model, query, documents, top_n}``,
  answered ``{"results": [{"index": i, "relevance_score": s}, ...]}``: Cohere, Jina, vLLM,
  llama.cpp's server, Infinity;
- ``tei``: ``POST {base_url}/rerank`` with ``{query, texts}``, answered
  ``[{"index": i, "score": s}, ...]``: Hugging Face text-embeddings-inference.

Either answer shape is accepted whichever request was sent. Settings: the arguments
(``[rerank] base_url / model / api_key``), else ``MEMDIR_RERANK_BASE_URL``,
``MEMDIR_RERANK_MODEL`` and ``MEMDIR_RERANK_API_KEY``. Failures raise
:class:`~memdir.errors.ProviderError`; the rerank stage then keeps the fused order.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from typing import Any

import httpx

from memdir.errors import ProviderResponseError, ProviderUnavailable
from memdir.http import Sleep, display_url, endpoint_url, normalize_base_url, post_json
from memdir.rerank.base import RerankDoc

BASE_URL_ENV = "MEMDIR_RERANK_BASE_URL"
MODEL_ENV = "MEMDIR_RERANK_MODEL"
API_KEY_ENV = "MEMDIR_RERANK_API_KEY"
APIS = ("cohere", "tei")


class HTTPReranker:
    """A remote cross-encoder (or any reranking service) behind ``POST …/rerank``.

    Args:
        base_url: the API root (``http://127.0.0.1:8080`` or ``https://api.jina.ai/v1``);
            None or empty means ``$MEMDIR_RERANK_BASE_URL``.
        model: the model name sent with each request (``cohere`` API); None or empty means
            ``$MEMDIR_RERANK_MODEL`` (may stay empty for a server that serves one model).
        api_key: the key itself; None means ``$MEMDIR_RERANK_API_KEY`` (may stay empty).
        api: ``cohere`` or ``tei`` (the request shape).
        timeout: seconds for connecting and for the answer.
        max_retries: tries in all (1: no retry; a search should not wait long).
        transport: an ``httpx`` transport, for tests.

    Raises:
        ProviderUnavailable: no base URL is configured.
        ConfigError: the base URL is not an http(s) URL, or ``api`` is unknown.
    """

    name = "http"
    remote = True

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        *,
        api: str = "cohere",
        timeout: float = 10.0,
        max_retries: int = 1,
        transport: httpx.BaseTransport | None = None,
        sleep: Sleep = time.sleep,
    ) -> None:
        url = (base_url or os.environ.get(BASE_URL_ENV, "")).strip()
        if not url:
            raise ProviderUnavailable(
                f"the http reranker needs an endpoint: set {BASE_URL_ENV}, or put "
                'base_url = "http://host:port" under [rerank] in your user config.toml'
            )
        if api not in APIS:
            raise ProviderUnavailable(f"rerank.api must be one of {', '.join(APIS)}")
        self.base_url = normalize_base_url(url, what="rerank base URL")
        self.model = (model or os.environ.get(MODEL_ENV, "")).strip()
        key = (api_key or os.environ.get(API_KEY_ENV, "")).strip()
        self.api = api
        self.timeout = timeout
        self.max_retries = max_retries
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._url = endpoint_url(self.base_url, "rerank")
        self._sleep = sleep
        self._client = httpx.Client(transport=transport, timeout=timeout)

    def __repr__(self) -> str:
        return f"HTTPReranker({display_url(self.base_url)!r}, model={self.model!r})"

    def rerank(self, query: str, docs: Sequence[RerankDoc]) -> list[float]:
        if not docs:
            return []
        texts = [doc.text for doc in docs]
        payload: dict[str, Any]
        if self.api == "tei":
            payload = {"query": query, "texts": texts}
        else:
            payload = {"query": query, "documents": texts, "top_n": len(texts)}
            if self.model:
                payload["model"] = self.model
        answer = post_json(
            self._client,
            self._url,
            payload,
            self._headers,
            who="reranker",
            timeout=self.timeout,
            max_retries=self.max_retries,
            sleep=self._sleep,
        )
        return parse_scores(answer, len(docs), where=f"reranker at {display_url(self._url)}")


def parse_scores(answer: Any, n: int, *, where: str) -> list[float]:
    """One score per document from either answer shape; a document the answer leaves out
    (a server that returned fewer than asked) ranks below every scored one, in its order.

    Raises:
        ProviderResponseError: the answer is neither shape, an index is out of range or
            repeated, or a score is not a finite number.
    """
    items = answer.get("results") if isinstance(answer, dict) else answer
    if not isinstance(items, list) or (n and not items):
        raise ProviderResponseError(
            f"{where}: expected {{'results': [{{index, relevance_score}}]}} or "
            f"[{{index, score}}], got {_preview(answer)}"
        )
    scores: dict[int, float] = {}
    for item in items:
        if not isinstance(item, dict):
            raise ProviderResponseError(f"{where}: a result is not an object: {_preview(item)}")
        index = item.get("index")
        value = item.get("relevance_score", item.get("score"))
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n:
            raise ProviderResponseError(f"{where}: result index {index!r} is not in 0..{n - 1}")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ProviderResponseError(f"{where}: result {index} has no numeric score")
        if not math.isfinite(float(value)):
            raise ProviderResponseError(f"{where}: result {index} has score {value!r}")
        if index in scores:
            raise ProviderResponseError(f"{where}: result index {index} appears twice")
        scores[index] = float(value)
    floor = min(scores.values()) - 1.0
    return [scores.get(i, floor - i / (n + 1)) for i in range(n)]


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:120] + "…"


__all__ = ["APIS", "API_KEY_ENV", "BASE_URL_ENV", "MODEL_ENV", "HTTPReranker", "parse_scores"]
