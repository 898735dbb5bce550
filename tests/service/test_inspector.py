"""``memdir ui`` through the service (issue 35): the inspector the service starts needs the
printed sign-in link like a standalone one, lives as long as a ``memdir ui`` holds it, and is
listed by ``memdir daemon status``. It used to answer anyone on 127.0.0.1 and to run on after
``memdir ui`` had exited."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from memdir.service import daemon
from tests.service.conftest import Service


def start_ui_client(
    service: Service, workspace: Path, *args: str
) -> tuple[subprocess.Popen[str], str]:
    """``memdir ui`` through the thin client, and the URL it printed."""
    process = subprocess.Popen(
        [sys.executable, "-m", "memdir", "-w", str(workspace), "ui", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        env=service.env(),
    )
    assert process.stdout is not None
    seen = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        seen.append(process.stdout.readline())
        if seen[-1].startswith("memdir ui: http") or not seen[-1]:
            break
    if not seen[-1].startswith("memdir ui: http"):
        process.kill()
        raise AssertionError("memdir ui did not start: " + "".join(seen))
    return process, seen[-1].split(": ", 1)[1].strip()


def inspectors(service: Service) -> list[dict[str, object]]:
    found = daemon.health(service.home)
    assert found is not None
    listed = found["inspectors"]
    assert isinstance(listed, list)
    return listed


def wait_until(condition: object, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def closed(base: str) -> bool:
    try:
        httpx.get(base + "api/index", timeout=5)
    except httpx.TransportError:
        return True
    return False


def test_the_service_s_inspector_needs_the_link_and_stops_with_memdir_ui(
    service: Service, notes: Path
) -> None:
    first, url = start_ui_client(service, notes, "--port", "0")
    base = url.split("?", 1)[0]
    try:
        assert url.startswith("http://127.0.0.1:") and "?token=" in url
        # Without the session: nothing, pages and API alike.
        for path in ("", "search?q=production", "api/search?q=production", "api/files/MEMORY.md"):
            answer = httpx.get(base + path, timeout=30)
            assert answer.status_code == 401 and "db-prod-01" not in answer.text, path
        with httpx.Client(timeout=60) as http:
            signed = http.get(url, follow_redirects=False)
            assert signed.status_code == 303 and "HttpOnly" in signed.headers["set-cookie"]
            found = http.get(base + "api/search", params={"q": "production database"}).json()
            assert found["results"][0]["path"] == "MEMORY.md"
        assert inspectors(service) == [
            {"workspace": str(notes), "url": base, "writable": False, "held_by": 1}
        ]
        port = str(urlsplit(base).port)
        second, second_url = start_ui_client(service, notes, "--port", port)
        assert second_url.split("?", 1)[0] == base and second_url != url  # a code of its own
        assert inspectors(service)[0]["held_by"] == 2
        second.send_signal(signal.SIGINT)  # Ctrl-C
        assert second.wait(timeout=30) == 0
        wait_until(lambda: inspectors(service)[0]["held_by"] == 1)
        assert not closed(base)  # the first still holds it
        status = service.memdir("-w", str(notes), "daemon", "status")
        assert f"inspector {base}".encode() in status.stdout, status.stdout
    finally:
        first.send_signal(signal.SIGINT)
        first.wait(timeout=30)
    wait_until(lambda: closed(base))  # the last `memdir ui` is gone: so is the inspector
    assert inspectors(service) == []


def test_a_killed_memdir_ui_takes_its_inspector_along(service: Service, notes: Path) -> None:
    process, url = start_ui_client(service, notes, "--port", "0", "--writable")
    base = url.split("?", 1)[0]
    assert inspectors(service)[0]["writable"] is True
    process.kill()  # no Ctrl-C, no goodbye: the socket closes with the process
    process.wait(timeout=30)
    wait_until(lambda: closed(base))
    assert inspectors(service) == []


def test_memdir_ui_says_so_when_the_service_stops(service: Service, notes: Path) -> None:
    process, url = start_ui_client(service, notes, "--port", "0")
    stopped = service.memdir("daemon", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert process.wait(timeout=60) == 1
    assert process.stdout is not None
    assert "the memdir service stopped, and the inspector with it" in process.stdout.read()
    assert closed(url.split("?", 1)[0])


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX")
def test_a_port_taken_by_something_else_is_said_once(service: Service, notes: Path) -> None:
    """The service refuses the port (409); ``memdir ui`` then runs the inspector itself, which
    says the port is in use."""
    import socket

    taken = socket.create_server(("127.0.0.1", 0))
    try:
        port = taken.getsockname()[1]
        done = service.memdir("-w", str(notes), "ui", "--port", str(port))
        assert done.returncode == 1 and b"is in use" in done.stderr, done.stderr
        assert inspectors(service) == []
    finally:
        taken.close()
