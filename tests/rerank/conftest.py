"""Fixtures for the reranker tests: a scriptable rerank server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.http_server import PROVIDER_ENV, ScriptedServer, SleepRecorder, run_server


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)


@dataclass
class RerankServer(ScriptedServer):
    """Answers ``POST /rerank`` like a cross-encoder: a document scores the number of its words
    that are query words (repeats count), best first, in the Cohere shape (TEI's when the
    request has ``texts``)."""

    def default_answer(self, target: str, payload: Any) -> tuple[int, Any]:
        if not urlsplit(target).path.endswith("/rerank"):
            return 404, {"error": "no such endpoint"}
        words = set(str(payload["query"]).lower().split())
        texts = payload.get("documents", payload.get("texts"))
        scores = [sum(w in words for w in str(t).lower().split()) / 10 for t in texts]
        order = sorted(range(len(texts)), key=lambda i: -scores[i])
        if "texts" in payload:
            return 200, [{"index": i, "score": scores[i]} for i in order]
        top = payload.get("top_n") or len(texts)
        return 200, {"results": [{"index": i, "relevance_score": scores[i]} for i in order[:top]]}


@pytest.fixture
def rerank_server() -> Iterator[RerankServer]:
    with run_server(RerankServer()) as app:
        yield app


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()
