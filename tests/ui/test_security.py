"""What keeps the inspector private: loopback Host names only, a token beyond loopback, no
write route but the confirmed apply, security headers, and nothing loaded from elsewhere."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from starlette.routing import Mount, Route
from starlette.testclient import TestClient

from memdir import Memory
from memdir.cli import cli
from memdir.errors import MemdirError
from memdir.ui import UIOptions, create_app
from memdir.ui.security import CONTENT_SECURITY_POLICY, TOKEN_COOKIE, host_name, is_loopback
from memdir.ui.server import bind, plan
from tests.ui.conftest import make_client

PAGES = (
    "/search?q=redis",
    "/files",
    "/files/MEMORY.md",
    "/index",
    "/dreaming?preview=1",
    "/history",
)


@pytest.mark.parametrize("host", ["127.0.0.1:8765", "localhost:8765", "[::1]:8765", "LOCALHOST"])
def test_loopback_host_names_are_served(mem: Memory, host: str) -> None:
    client = make_client(mem, host=host)
    assert client.get("/index", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize("host", ["evil.example:8765", "127.0.0.1.nip.io", "192.168.1.5:8765", ""])
def test_other_host_names_are_refused(mem: Memory, host: str) -> None:
    response = make_client(mem).get("/api/index", headers={"Host": host})
    assert response.status_code == 400
    assert "unexpected Host header" in response.json()["error"]


def test_a_fixed_token_lets_requests_in(mem: Memory) -> None:
    client = make_client(mem, UIOptions(token="s3cret", allowed_hosts=()), signed_in=False)
    assert client.get("/api/index").status_code == 401
    assert client.get("/static/memdir.css").status_code == 401
    assert client.get("/api/index", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/api/index", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    first = client.get("/search?q=redis&token=s3cret", follow_redirects=False)
    assert first.status_code == 303 and first.headers["location"] == "/search?q=redis"
    assert (
        "HttpOnly" in first.headers["set-cookie"]
        and "SameSite=strict" in first.headers["set-cookie"]
    )
    assert client.cookies.get(f"{TOKEN_COOKIE}_8765") == "s3cret"
    assert client.get("/search?q=redis").status_code == 200
    remote = {"Host": "inspector.example:8765", "Authorization": "Bearer s3cret"}
    assert client.get("/api/index", headers=remote).status_code == 200


def test_only_the_dream_apply_accepts_a_write_method(mem: Memory) -> None:
    app = create_app(mem)
    writes = []
    for route in app.routes:
        if isinstance(route, Route) and route.methods and route.methods - {"GET", "HEAD"}:
            writes.append(route.path)
        else:
            assert isinstance(route, Route | Mount)
    assert writes == ["/api/dreaming/apply"]
    client = make_client(mem)
    for path in ("/search", "/api/search", "/files/MEMORY.md", "/api/files/MEMORY.md", "/index"):
        assert client.post(path).status_code in (403, 405)


@pytest.mark.parametrize("path", [*PAGES, "/static/memdir.css", "/api/index", "/files/nope.txt"])
def test_security_headers_on_every_response(client: TestClient, path: str) -> None:
    headers = client.get(path).headers
    assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"
    assert headers["referrer-policy"] == "no-referrer"


def test_pages_load_nothing_from_elsewhere(client: TestClient, mem: Memory) -> None:
    from tests.ui.conftest import seed_lock_recalls

    seed_lock_recalls(mem)
    for path in PAGES:
        html = client.get(path).text
        for url in re.findall(r'(?:src|href|action)="([^"]*)"', html):
            assert url.startswith(("/", "?", "#")) and not url.startswith("//"), (path, url)
        assert "<script>" not in html and " style=" not in html, path  # the CSP allows neither
    for asset in ("/static/memdir.css", "/static/memdir.js"):
        assert not re.search(r"https?://", client.get(asset).text), asset
    assert "'unsafe-inline'" not in CONTENT_SECURITY_POLICY


def test_host_helpers() -> None:
    assert host_name("[::1]:8765") == "::1" and host_name("Localhost:80") == "localhost"
    assert is_loopback("127.0.0.2") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.0.0.1")


def test_every_printed_url_holds_a_one_time_sign_in_code() -> None:
    with pytest.raises(MemdirError, match="--allow-remote"):
        plan("0.0.0.0", 0, writable=False, allow_remote=False, token=None)
    for host, allow_remote in (("0.0.0.0", True), ("127.0.0.1", False)):
        sock, listening = plan(host, 0, writable=True, allow_remote=allow_remote, token=None)
        sock.close()
        assert listening.options.token is None and listening.options.writable
        base, code = listening.url.split("?token=")
        assert base == f"http://{host}:{listening.port}/" and len(code) >= 32
        session = listening.options.access.sign_in(code)
        assert session and listening.options.access.allows(session)
        assert listening.options.access.sign_in(code) is None  # spent
    assert listening.options.allowed_hosts == ("127.0.0.1", "localhost", "::1")
    sock, listening = plan("127.0.0.1", 0, writable=False, allow_remote=False, token="t0k")
    sock.close()
    assert listening.url == f"http://127.0.0.1:{listening.port}/?token=t0k"  # MEMDIR_UI_TOKEN


def test_a_port_in_use_is_one_clear_error() -> None:
    taken = bind("127.0.0.1", 0)
    try:
        with pytest.raises(MemdirError, match="is in use: choose another with --port"):
            bind("127.0.0.1", taken.getsockname()[1])
    finally:
        taken.close()


def test_cli_refuses_a_remote_host_without_the_flag(sample: object) -> None:
    result = CliRunner().invoke(cli, ["-w", str(sample), "ui", "--host", "0.0.0.0"])
    assert result.exit_code == 1
    assert "refusing to listen on 0.0.0.0" in result.output


def _concrete_paths(mem: Memory) -> list[str]:
    paths = []
    for route in create_app(mem).routes:
        assert isinstance(route, Route | Mount)
        paths.append(route.path.replace("{path:path}", "MEMORY.md") or "/static/memdir.css")
    return paths


@pytest.mark.parametrize(
    "cookie", ["", "memdir_ui_8765=guess", "memdir_ui_8765="], ids=["none", "guessed", "empty"]
)
def test_without_a_session_every_route_is_refused(mem: Memory, cookie: str) -> None:
    """The probe: a second local user read every note and, with --writable, applied a dream
    run (the CSRF token from the page, the confirm code from /api/dreaming). Without the
    session cookie every page, /api/ route and static file answers 401 and shows nothing."""
    client = make_client(mem, UIOptions(writable=True), signed_in=False)
    memory_md = (mem.workspace.root / "MEMORY.md").read_bytes()
    headers = {"Cookie": cookie} if cookie else {}
    for path in [*_concrete_paths(mem), "/search?q=redis", "/api/dreaming?gates=manual"]:
        for method in ("GET", "HEAD", "POST"):
            answer = client.request(method, path, headers=headers, json={"confirm": "x"})
            assert answer.status_code == 401, (method, path, answer.status_code)
            assert "Redis" not in answer.text and "分布式锁" not in answer.text, path
    wrong = client.get("/?token=guess", follow_redirects=False)
    assert wrong.status_code == 401 and "used already" in wrong.text
    assert (mem.workspace.root / "MEMORY.md").read_bytes() == memory_md


def test_a_sign_in_link_works_once(mem: Memory) -> None:
    options = UIOptions()
    code = options.access.issue()
    first = make_client(mem, options, signed_in=False)
    signed = first.get(f"/files?token={code}&x=1", follow_redirects=False)
    assert signed.status_code == 303 and signed.headers["location"] == "/files?x=1"
    cookie = signed.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    assert first.get("/api/index").status_code == 200
    again = first.get(f"/files?token={code}", follow_redirects=False)  # signed in already
    assert again.status_code == 303 and "set-cookie" not in again.headers
    other = make_client(mem, options, signed_in=False)  # another browser, the same link
    assert other.get(f"/?token={code}", follow_redirects=False).status_code == 401
    assert other.get("/api/index").status_code == 401
