"""Fixtures for the embedding tests: a scriptable embeddings server on 127.0.0.1.

The server speaks the three wire formats memdir uses (OpenAI ``/embeddings``, Ollama
``/api/embed``, Gemini ``:batchEmbedContents``). With nothing queued it answers every request
deterministically (a vector derived from each text's hash); ``enqueue()`` scripts the next
answers (status, body, headers, delay) and ``requests`` records what arrived. The server
itself lives in :mod:`tests.http_server`, shared with the LLM tests.
"""

from __future__ import annotations

import hashlib
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
class EmbeddingServer(ScriptedServer):
    """A real HTTP server on 127.0.0.1 that answers embedding requests as scripted."""

    dims: int = 8

    def vector_for(self, text: str, dims: int | None = None) -> list[float]:
        """The default answer's (not normalised) vector for ``text``."""
        size = dims or self.dims
        digest = b""
        counter = 0
        while len(digest) < size:
            digest += hashlib.sha256(f"{counter}:{text}".encode()).digest()
            counter += 1
        return [(byte - 127.5) / 12.75 for byte in digest[:size]]

    def default_answer(self, target: str, payload: Any) -> tuple[int, Any]:
        path = urlsplit(target).path
        if path.endswith("/embeddings"):
            inputs = payload["input"]
            texts = [inputs] if isinstance(inputs, str) else inputs
            data = [
                {"object": "embedding", "index": i, "embedding": self.vector_for(t)}
                for i, t in enumerate(texts)
            ]
            return 200, {"object": "list", "data": data, "model": payload["model"]}
        if path.endswith("/api/embed"):
            inputs = payload["input"]
            texts = [inputs] if isinstance(inputs, str) else inputs
            return 200, {
                "model": payload["model"],
                "embeddings": [self.vector_for(t) for t in texts],
            }
        if path.endswith(":batchEmbedContents"):
            texts = [r["content"]["parts"][0]["text"] for r in payload["requests"]]
            return 200, {"embeddings": [{"values": self.vector_for(t)} for t in texts]}
        return 404, {"error": f"no such endpoint {path}"}


@pytest.fixture
def http_server() -> Iterator[EmbeddingServer]:
    """A scriptable embeddings server on 127.0.0.1 (port chosen by the OS)."""
    with run_server(EmbeddingServer()) as app:
        yield app


@pytest.fixture
def sleeps() -> SleepRecorder:
    """An injectable sleep that records delays instead of waiting."""
    return SleepRecorder()
