"""Fixtures for the inspector: the sample workspace (plus a note holding HTML), its Memory with
the fake embedder, recalls seeded so that one daily-log line passes the dreaming gates, and the
app behind Starlette's TestClient (httpx in process) or a real ``memdir ui`` process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from memdir import FakeEmbedder, Memory, init_workspace
from memdir.ui import UIOptions, create_app
from tests.dreaming.factories import seed_recalls
from tests.helpers import write

NOW = "2026-11-29T10:00"
BASE_URL = "http://127.0.0.1:8765"
#: Line 3 of the sample's memory/2026-11-28.md: the hit of the Chinese query, and the entry
#: the seeded recalls make promotable.
LOCK_LINE = (
    "- 讨论了订单服务的并发问题，决定使用 Redis 分布式锁（SET NX PX 30000），"
    "锁的 key 前缀是 lock:order:。"
)
XSS_NOTE = "# Pitfalls\n\n- <script>alert('memdir-xss')</script> must show as text.\n"


@pytest.fixture
def sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``memdir init --sample`` plus a topic note holding a script tag; "now" is 2026-11-29."""
    root, _ = init_workspace(tmp_path / "ws", "en", sample=True)
    write(root, "memory/pitfalls.md", XSS_NOTE)
    monkeypatch.setenv("MEMDIR_NOW", NOW)
    return root


@pytest.fixture
def mem(sample: Path) -> Iterator[Memory]:
    with Memory(sample, embedder=FakeEmbedder()) as memory:
        yield memory


def seed_lock_recalls(memory: Memory) -> str:
    """Recall the lock decision 3 queries a day for 3 days: it passes the manual gates."""
    assert LOCK_LINE in (memory.workspace.root / "memory/2026-11-28.md").read_text("utf-8")
    return seed_recalls(
        memory.recalls,
        "memory/2026-11-28.md",
        3,
        3,
        LOCK_LINE,
        until=datetime.fromisoformat("2026-11-29T09:00"),
        days=3,
        tags=("redis", "分布式锁"),
    )


TLS_LINE = "- TODO: renew the TLS certificate for api.example.com before 2026-12-15."
SESSION_LINE = (
    "- Decided to keep session tokens in Redis with a 24h TTL; the cache cluster listens on "
    "port 6380, not the default 6379."
)


def seed_history(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A workspace with a past: the TLS todo recalled and promoted by a dream run on the evening
    of 2026-11-28, then the lock decision recalled enough to pass the gates and the Redis
    session note recalled once (below them)."""
    text = (memory.workspace.root / "memory/2026-11-28.md").read_text("utf-8")
    assert TLS_LINE in text.splitlines()[4]
    seed_recalls(
        memory.recalls,
        "memory/2026-11-28.md",
        5,
        5,
        TLS_LINE,
        until=datetime.fromisoformat("2026-11-28T20:00"),
        days=3,
        tags=("tls", "certificate"),
    )
    monkeypatch.setenv("MEMDIR_NOW", "2026-11-28T23:00")
    assert memory.dream(apply=True).promoted
    monkeypatch.setenv("MEMDIR_NOW", NOW)
    seed_lock_recalls(memory)
    seed_recalls(
        memory.recalls,
        "memory/2026-11-27.md",
        4,
        4,
        SESSION_LINE,
        until=datetime.fromisoformat("2026-11-29T08:00"),
        days=1,
        queries=("redis session ttl",),
        score=0.6,
    )


def make_client(
    memory: Memory,
    options: UIOptions | None = None,
    *,
    signed_in: bool = True,
    host: str | None = None,
) -> TestClient:
    """The inspector over ``memory`` behind Starlette's TestClient; ``signed_in``: through the
    real sign-in (a one-time code in the URL, which sets the session cookie) with ``host`` as
    the Host header (the cookie is named after its port)."""
    options = options or UIOptions()
    client = TestClient(create_app(memory, options), base_url=BASE_URL)
    if signed_in:
        headers = {"Host": host} if host else {}
        code = options.access.issue()
        first = client.get(f"/?token={code}", headers=headers, follow_redirects=False)
        assert first.status_code == 303 and "set-cookie" in first.headers, first.text
    return client


@pytest.fixture
def client(mem: Memory) -> TestClient:
    """The read-only inspector (the default)."""
    return make_client(mem)


@pytest.fixture
def writable(mem: Memory) -> TestClient:
    """The inspector started with --writable."""
    return make_client(mem, UIOptions(writable=True))


@dataclass
class RunningUI:
    """A ``memdir ui`` process and the URL it printed (with its one-time sign-in code)."""

    process: subprocess.Popen[str]
    url: str
    workspace: Path
    cookie: tuple[str, str] | None = None

    @property
    def base(self) -> str:
        """The inspector's address without the sign-in code (``http://127.0.0.1:PORT/``)."""
        return self.url.split("?", 1)[0]

    def session(self) -> tuple[str, str]:
        """The session cookie (name, value) the printed link gives (spending its code)."""
        if self.cookie is None:
            first = httpx.get(self.url, timeout=60, follow_redirects=False)
            assert first.status_code == 303, first.text
            ((name, value),) = first.cookies.items()
            self.cookie = (name, value)
        return self.cookie

    def client(self) -> httpx.Client:
        """An HTTP client signed in with :meth:`session`, at :attr:`base`."""
        name, value = self.session()
        return httpx.Client(base_url=self.base, cookies={name: value}, timeout=60)


def start_ui(workspace: Path, env: dict[str, str], *args: str) -> RunningUI:
    """Start ``memdir ui --port 0`` on ``workspace`` and wait for the URL it prints."""
    process = subprocess.Popen(
        [sys.executable, "-m", "memdir", "-w", str(workspace), "ui", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    deadline = time.monotonic() + 60
    line = ""
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line.startswith("memdir ui: http") or not line:
            break
    if not line.startswith("memdir ui: http"):
        process.kill()
        out = line + process.stdout.read()
        raise AssertionError(f"memdir ui did not start: {out}")
    return RunningUI(process, line.split(": ", 1)[1].strip(), workspace)


def stop_ui(ui: RunningUI) -> None:
    ui.process.terminate()
    try:
        ui.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        ui.process.kill()
        ui.process.wait()


def _running_ui(sample: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Iterator[RunningUI]:
    provider = os.environ.get("MEMDIR_UI_TEST_EMBEDDER", "fake")
    write(sample, ".memdir/config.toml", f'[embedding]\nprovider = "{provider}"\n')
    with Memory(sample) as memory:
        memory.sync()
        seed_history(memory, monkeypatch)
    env = {**os.environ, "MEMDIR_NOW": NOW}
    ui = start_ui(sample, env, *args)
    try:
        # Up, and closed to a request without the session (the printed link is left unspent).
        assert httpx.get(ui.base + "index", timeout=30).status_code == 401
        yield ui
    finally:
        stop_ui(ui)


@pytest.fixture
def ui_process(sample: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningUI]:
    """A real ``memdir ui`` process over the sample workspace with a past (:func:`seed_history`),
    on a free loopback port. The embedder is the fake one, set in the workspace config
    (``MEMDIR_UI_TEST_EMBEDDER=local`` uses the real local model, e.g. for the README's
    screenshots)."""
    yield from _running_ui(sample, monkeypatch)


@pytest.fixture
def writable_ui_process(sample: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningUI]:
    """:func:`ui_process` started with ``--writable``."""
    yield from _running_ui(sample, monkeypatch, "--writable")
