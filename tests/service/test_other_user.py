"""A second Unix user reads and changes nothing through any listener memdir opens (issue 35): the
standalone inspector, the inspector the service starts, the service's TCP port and its Unix
socket. The probes run as the user ``memdirprobe`` (:mod:`tests.other_user`) with the system
Python and the standard library, as that user could; they skip where no second user can be
made (not root, no ``useradd`` or ``setpriv``)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.other_user import SYSTEM_PYTHON, as_other_user
from tests.service.conftest import Service
from tests.service.test_inspector import start_ui_client
from tests.ui.conftest import start_ui, stop_ui

#: Requests a second user might try against an inspector, every page and API, the static
#: files, the write route, and guessed sign-in links.
INSPECTOR_PROBES = [
    ("GET", "/"),
    ("GET", "/search?q=production"),
    ("GET", "/api/search?q=production"),
    ("GET", "/files"),
    ("GET", "/files/MEMORY.md"),
    ("GET", "/api/files/MEMORY.md"),
    ("GET", "/index"),
    ("GET", "/api/index"),
    ("GET", "/dreaming?preview=1"),
    ("GET", "/api/dreaming"),
    ("GET", "/history"),
    ("GET", "/api/history"),
    ("GET", "/review"),
    ("GET", "/api/review"),
    ("GET", "/static/memdir.css"),
    ("GET", "/static/memdir.js"),
    ("POST", "/api/dreaming/apply"),
    ("GET", "/?token=guess"),
    ("GET", "/?token="),
]

#: Run as the other user: each (method, path) against a base URL, optionally with a header;
#: prints {path: [status, body]}. Connection failures are status 0.
PROBE = """
import json, sys, urllib.request, urllib.error
base, probes, headers = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
out = {}
for method, path in probes:
    data = b'{"confirm": "0000000000000000"}' if method == "POST" else None
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            out[method + " " + path] = [answer.status, answer.read().decode("utf-8", "replace")]
    except urllib.error.HTTPError as exc:
        out[method + " " + path] = [exc.code, exc.read().decode("utf-8", "replace")]
    except OSError as exc:
        out[method + " " + path] = [0, repr(exc)]
print(json.dumps(out))
"""

#: Run as the other user: connect to a Unix socket and send a request; prints what happened.
SOCKET_PROBE = """
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(sys.argv[1])
    s.sendall(b"GET /v1/health HTTP/1.1\\r\\nHost: memdir\\r\\nConnection: close\\r\\n\\r\\n")
    print("connected:", s.recv(200))
except OSError as exc:
    print("refused:", exc.errno)
"""


def probe(base: str, probes: list[tuple[str, str]], **headers: str) -> dict[str, list[object]]:
    """What the other user gets for each request."""
    if not Path(SYSTEM_PYTHON).exists():
        pytest.skip(f"the probe runs with {SYSTEM_PYTHON}")
    done = subprocess.run(
        [
            *as_other_user(),
            SYSTEM_PYTHON,
            "-c",
            PROBE,
            base,
            json.dumps(probes),
            json.dumps(headers),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"},
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, list[object]] = json.loads(done.stdout)
    return result


def assert_nothing_read(answers: dict[str, list[object]], *secrets: str) -> None:
    for request, (status, body) in answers.items():
        assert status in (401, 403), (request, status, str(body)[:200])
        assert not any(s in str(body) for s in secrets), (request, str(body)[:200])


def test_the_standalone_inspector_shows_another_user_nothing(notes: Path) -> None:
    """A writable ``memdir ui`` of the owner's: every page, API route and static file, the
    dream apply and guessed sign-in links answer 401 to another user; MEMORY.md unchanged."""
    before = (notes / "MEMORY.md").read_bytes()
    ui = start_ui(notes, {**os.environ, "MEMDIR_SERVICE": "off"}, "--writable")
    try:
        answers = probe(ui.base.rstrip("/"), INSPECTOR_PROBES)
    finally:
        stop_ui(ui)
    assert_nothing_read(answers, "db-prod-01", "9090", "memdir.css")
    assert (notes / "MEMORY.md").read_bytes() == before


def test_the_service_shows_another_user_nothing(service: Service, notes: Path) -> None:
    """The service's inspector (writable), its TCP routes without the token or with a guessed
    one, and its Unix socket (another user cannot even connect)."""
    before = (notes / "MEMORY.md").read_bytes()
    process, url = start_ui_client(service, notes, "--port", "0", "--writable")
    try:
        inspector = probe(url.split("?", 1)[0].rstrip("/"), INSPECTOR_PROBES)
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert_nothing_read(inspector, "db-prod-01", "9090", "memdir.css")
    tcp_probes = [
        ("GET", "/v1/health"),
        ("POST", f"/v1/hooks/claude-code/session-start?workspace={notes}"),
        ("POST", f"/v1/hooks/claude-code/user-prompt-submit?workspace={notes}"),
        ("POST", f"/mcp?workspace={notes}"),
        ("POST", "/v1/cli"),
        ("POST", "/v1/shutdown"),
    ]
    base = f"http://127.0.0.1:{service.port}"
    for headers in ({}, {"Authorization": "Bearer guessed-token-0123456789abcdefghijklmnop"}):
        answers = probe(base, tcp_probes, **headers)
        for request, (status, body) in answers.items():
            assert status == 401, (request, status, body)
            assert "db-prod-01" not in str(body) and str(notes) not in str(body)
    where = json.loads((service.home / "service" / "service.json").read_text())["socket"]
    connected = subprocess.run(
        [*as_other_user(), SYSTEM_PYTHON, "-c", SOCKET_PROBE, where],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert connected.stdout.startswith("refused: 13"), connected  # EACCES
    assert (notes / "MEMORY.md").read_bytes() == before
    assert service.memdir("daemon", "status").returncode == 0  # still running, not shut down
