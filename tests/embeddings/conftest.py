"""Fixtures for the embedding tests: a scriptable embeddings server on 127.0.0.1.

The server speaks the three wire formats memdir uses (OpenAI ``/embeddings``, Ollama
``/api/embed``, Gemini ``:batchEmbedContents``). With nothing queued it answers every request
deterministically (a vector derived from each text's hash); ``enqueue()`` scripts the next
answers (status, body, headers, delay) and ``requests`` records what arrived.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest

#: Variables that would steer a provider away from the test server or give it a real key.
_PROVIDER_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "MEMDIR_EMBEDDING_BASE_URL",
    "OLLAMA_HOST",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)


@dataclass
class ScriptedResponse:
    status: int
    body: Any
    headers: dict[str, str]
    delay: float


@dataclass
class ReceivedRequest:
    path: str
    headers: dict[str, str]  # names lower-cased
    json: Any


@dataclass
class EmbeddingServer:
    """A real HTTP server on 127.0.0.1 that answers embedding requests as scripted."""

    dims: int = 8
    requests: list[ReceivedRequest] = field(default_factory=list)
    url: str = ""
    _queue: deque[ScriptedResponse] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def enqueue(
        self,
        status: int,
        body: Any,
        headers: dict[str, str] | None = None,
        delay: float = 0.0,
    ) -> None:
        """Script the next answer: a dict/list body is sent as JSON, a str as it is."""
        with self._lock:
            self._queue.append(ScriptedResponse(status, body, dict(headers or {}), delay))

    def vector_for(self, text: str, dims: int | None = None) -> list[float]:
        """The default answer's (not normalised) vector for ``text``."""
        size = dims or self.dims
        digest = b""
        counter = 0
        while len(digest) < size:
            digest += hashlib.sha256(f"{counter}:{text}".encode()).digest()
            counter += 1
        return [(byte - 127.5) / 12.75 for byte in digest[:size]]

    def handle(self, path: str, headers: dict[str, str], payload: Any) -> ScriptedResponse:
        with self._lock:
            self.requests.append(ReceivedRequest(path, headers, payload))
            if self._queue:
                return self._queue.popleft()
        status, body = self._default_answer(path, payload)
        return ScriptedResponse(status, body, {}, 0.0)

    def _default_answer(self, target: str, payload: Any) -> tuple[int, Any]:
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


def _make_handler(app: EmbeddingServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                payload = json.loads(raw) if raw else None
            except ValueError:
                payload = raw.decode("utf-8", "replace")
            headers = {k.lower(): v for k, v in self.headers.items()}
            answer = app.handle(self.path, headers, payload)
            if answer.delay:
                time.sleep(answer.delay)
            body = answer.body if isinstance(answer.body, str) else json.dumps(answer.body)
            data = body.encode("utf-8")
            try:
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test): nothing to answer

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output quiet

    return Handler


@pytest.fixture
def http_server() -> Iterator[EmbeddingServer]:
    """A scriptable embeddings server on 127.0.0.1 (port chosen by the OS)."""
    app = EmbeddingServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(app))
    httpd.daemon_threads = True
    app.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    # A short poll interval keeps shutdown() (and so each test's teardown) fast.
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield app
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


class SleepRecorder:
    """Stands in for ``time.sleep``: records each requested delay and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def sleeps() -> SleepRecorder:
    """An injectable sleep that records delays instead of waiting."""
    return SleepRecorder()
