"""``memdir ui`` as a real process: it listens on loopback only and serves the same data; the
URL it prints works, and its redirects stay on its origin."""

from __future__ import annotations

import os
import pty
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.helpers import write
from tests.ui.conftest import RunningUI, start_ui, stop_ui

TCP_TABLE = Path("/proc/net/tcp")


def test_serves_search_on_loopback(ui_process: RunningUI) -> None:
    assert ui_process.url.startswith("http://127.0.0.1:")
    with ui_process.client() as http:
        body = http.get("api/search", params={"q": "Redis 分布式锁"}).json()
        assert body["results"][0]["path"] == "memory/2026-11-28.md"
        refused = http.get("api/index", headers={"Host": "evil.example"})
        assert refused.status_code == 400
    # Without the session cookie: nothing (the printed link was spent by the client above).
    assert httpx.get(ui_process.base + "api/search?q=redis", timeout=30).status_code == 401
    spent = httpx.get(ui_process.url, timeout=30, follow_redirects=False)
    assert spent.status_code == 401 and "used already" in spent.text


@pytest.mark.skipif(not TCP_TABLE.exists(), reason="needs Linux's /proc/net/tcp")
def test_the_socket_is_bound_to_127_0_0_1_only(ui_process: RunningUI) -> None:
    port = int(urlsplit(ui_process.url).port or 0)
    listening = []
    for line in TCP_TABLE.read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, hex_port = local.split(":")
        if int(hex_port, 16) == port and state == "0A":  # 0A: LISTEN
            listening.append(address)
    assert listening == ["0100007F"]  # 127.0.0.1, little-endian


def _loopback_alias_works() -> bool:
    try:
        socket.create_server(("127.0.0.2", 0)).close()
    except OSError:
        return False
    return True


@pytest.fixture
def small_ws(sample: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write(sample, ".memdir/config.toml", '[embedding]\nprovider = "fake"\n')
    return sample


@pytest.mark.skipif(not _loopback_alias_works(), reason="127.0.0.2 cannot be bound here")
def test_the_url_printed_for_another_loopback_address_works(small_ws: Path) -> None:
    """``--host 127.0.0.2`` printed a URL that answered 400 (only 127.0.0.1 and localhost were
    accepted Host names)."""
    ui = start_ui(small_ws, dict(os.environ), "--host", "127.0.0.2")
    try:
        assert ui.url.startswith("http://127.0.0.2:")
        with httpx.Client(timeout=30, follow_redirects=True) as http:
            page = http.get(ui.url)  # signs in, then the home page
            assert page.status_code == 200 and "memdir" in page.text
            index = http.get(ui.base + "api/index")
            assert index.status_code == 200 and "files" in index.json()
            wrong = http.get(ui.base + "api/index", headers={"Host": "evil.example"})
            assert wrong.status_code == 400
    finally:
        stop_ui(ui)


def raw_get(url: str, target: str) -> tuple[int, dict[str, str]]:
    """Send ``GET <target>`` as written (no client rewrites it) to the server of ``url``."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as conn:
        request = f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: close\r\n\r\n"
        conn.sendall(request.encode("latin-1"))
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in head[1:])
    return int(head[0].split()[1]), {k.lower(): v for k, v in headers.items()}


def test_a_real_server_redirects_on_its_own_origin(small_ws: Path) -> None:
    """With a token, ``//evil.example/x?token=…`` redirected to ``//evil.example/x``."""
    ui = start_ui(small_ws, {**os.environ, "MEMDIR_UI_TOKEN": "tok-123"})
    try:
        for target in ("//evil.example/x", "/%2F%2Fevil.example/x", "///evil.example"):
            status, headers = raw_get(ui.url, f"{target}?token=tok-123")
            assert status == 303, (target, status)
            location = headers["location"]
            assert location.startswith("/") and not location.startswith(("//", "/\\")), location
        status, headers = raw_get(ui.url, "/search/?token=tok-123")
        assert status == 303 and headers["location"] == "/search/"
    finally:
        stop_ui(ui)


def test_enter_prints_another_sign_in_link(small_ws: Path) -> None:
    """A standalone inspector on a terminal: each Enter prints a new one-time link."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "memdir", "-w", str(small_ws), "ui", "--port", "0"],
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "MEMDIR_SERVICE": "off"},
    )
    os.close(terminal)
    assert process.stdout is not None
    try:
        links = []
        deadline = time.monotonic() + 60
        while len(links) < 2 and time.monotonic() < deadline:
            line = process.stdout.readline()
            assert line, "memdir ui ended"
            if line.startswith("memdir ui: http"):
                links.append(line.split(": ", 1)[1].strip())
            elif "press Enter here for a new link" in line:
                os.write(controller, b"\n")
        first, second = links
        assert first != second and first.split("?")[0] == second.split("?")[0]
        for link in (first, second):  # each signs a browser in, once
            assert httpx.get(link, timeout=30).status_code == 303
            assert httpx.get(link, timeout=30).status_code == 401
    finally:
        process.terminate()
        process.wait(timeout=30)
        os.close(controller)
