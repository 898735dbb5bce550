"""A real, scriptable HTTP server on 127.0.0.1 for provider tests (embeddings, LLMs, rerankers).

:class:`ScriptedServer` records every request and answers from a queue that tests fill with
``enqueue()`` (status, body, headers, delay). With nothing queued it calls
:meth:`ScriptedServer.default_answer`, which subclasses override to speak one wire format. A body
given as an :class:`EventStream` is sent as server-sent events, each written and flushed on its
own (the connection closes after the last, as HTTP/1.0 does).
:func:`run_server` starts it on a free port; :class:`SleepRecorder` stands in for
``time.sleep`` so retry tests never wait.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

#: Variables that would steer a provider away from a test server or give it a real key.
PROVIDER_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "MEMDIR_EMBEDDING_BASE_URL",
    "MEMDIR_LLM_BASE_URL",
    "MEMDIR_LLM_MODEL",
    "MEMDIR_LLM_API_KEY",
    "MEMDIR_RERANK_BASE_URL",
    "MEMDIR_RERANK_MODEL",
    "MEMDIR_RERANK_API_KEY",
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


@dataclass
class EventStream:
    """A body of server-sent events: ``(event name or None, data)`` pairs; dict/list data is
    sent as JSON, a str as it is."""

    events: list[tuple[str | None, Any]]

    def encoded(self) -> list[bytes]:
        out = []
        for name, data in self.events:
            text = data if isinstance(data, str) else json.dumps(data)
            head = f"event: {name}\n" if name else ""
            out.append(f"{head}data: {text}\n\n".encode())
        return out


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
class ScriptedServer:
    """Answers POST requests as scripted; subclasses give the default answer."""

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

    def handle(self, path: str, headers: dict[str, str], payload: Any) -> ScriptedResponse:
        with self._lock:
            self.requests.append(ReceivedRequest(path, headers, payload))
            if self._queue:
                return self._queue.popleft()
        status, body = self.default_answer(path, payload)
        return ScriptedResponse(status, body, {}, 0.0)

    def default_answer(self, target: str, payload: Any) -> tuple[int, Any]:
        """The answer when nothing is queued: ``(status, body)``."""
        return 404, {"error": f"nothing scripted for {target}"}


def _make_handler(app: ScriptedServer) -> type[BaseHTTPRequestHandler]:
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
            if isinstance(answer.body, EventStream):
                self._send_events(answer)
                return
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

        def _send_events(self, answer: ScriptedResponse) -> None:
            try:
                self.send_response(answer.status)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                for chunk in answer.body.encoded():
                    self.wfile.write(chunk)
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading (an interrupted reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output quiet

    return Handler


ServerT = TypeVar("ServerT", bound=ScriptedServer)


@contextmanager
def run_server(app: ServerT) -> Iterator[ServerT]:
    """Serve ``app`` on 127.0.0.1 (port chosen by the OS) until the block ends."""
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
