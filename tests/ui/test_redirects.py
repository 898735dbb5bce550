"""Every redirect the inspector makes stays on its own origin (issue 27), and the loopback
address given with ``--host`` is an accepted Host (its printed URL works).

The hostile paths are sent as raw request targets: an HTTP client would read ``//evil.example/x``
as another host before sending anything, so the app is driven over ASGI with the exact path a
server hands it, and in :mod:`tests.ui.test_process` over a real socket.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import anyio
import pytest
from starlette.routing import Mount, Route

from memdir import Memory
from memdir.ui import UIOptions, create_app
from memdir.ui.security import LOOPBACK_NAMES, same_origin
from memdir.ui.server import loopback_hosts, plan
from tests.ui.conftest import make_client

TOKEN = "s3cret-token"
#: Request paths that a browser, given back as a Location, would read as another host.
HOSTILE_PATHS = (
    "//evil.example/x",
    "///evil.example/x",
    "/\\evil.example/x",
    "/\\/evil.example/x",
    "//evil.example",
    "/\t/evil.example/x",
)


def asgi_get(
    app: object, path: str, query: str = "", host: str = "127.0.0.1:8765", cookie: str = ""
) -> tuple:
    """``GET path?query`` handed to the ASGI app as a server would (path already decoded),
    with ``cookie`` as the Cookie header when given; returns (status, headers as a dict of
    str)."""
    messages: list[dict] = []
    received: list[bool] = []

    async def receive() -> dict:
        if received:  # the body was read: the client stays connected until the reply is sent
            await anyio.sleep_forever()
        received.append(True)
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        messages.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode("utf-8"),
        "root_path": "",
        "query_string": query.encode("latin-1"),
        "headers": [(b"host", host.encode("latin-1"))]
        + ([(b"cookie", cookie.encode("latin-1"))] if cookie else []),
        "server": ("127.0.0.1", 8765),
        "client": ("127.0.0.1", 50000),
    }
    anyio.run(app, scope, receive, send)  # type: ignore[arg-type]
    start = next(m for m in messages if m["type"] == "http.response.start")
    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in start["headers"]}
    return start["status"], headers


def assert_same_origin(location: str) -> None:
    parts = urlsplit(location)
    assert not parts.scheme and not parts.netloc, location
    assert location.startswith("/") and not location.startswith(("//", "/\\")), location
    assert not any(c in location for c in "\\\t\r\n"), location


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_the_token_redirect_stays_on_this_origin(mem: Memory, path: str) -> None:
    """The probe: with a token (always beyond loopback), ``//evil.example/x?token=…`` sets the
    cookie and redirected to ``//evil.example/x``, another site."""
    app = create_app(mem, UIOptions(token=TOKEN, allowed_hosts=()))
    status, headers = asgi_get(app, path, f"token={TOKEN}&q=redis")
    assert status == 303 and "set-cookie" in headers
    assert_same_origin(headers["location"])
    assert headers["location"].endswith("?q=redis")


def test_every_route_redirects_on_this_origin_only(mem: Memory) -> None:
    """Each route (and the trailing-slash redirect Starlette makes for it), under every hostile
    prefix, with and without a token: any Location is a path on this origin."""
    for options in (UIOptions(), UIOptions(token=TOKEN, allowed_hosts=())):
        app = create_app(mem, options)
        session = options.access.sign_in(options.access.issue())  # what the cookie holds
        cookie = "" if options.token else f"memdir_ui_8765={session}"
        paths = ["/"]
        for route in app.routes:
            assert isinstance(route, Route | Mount)
            concrete = route.path.replace("{path:path}", "MEMORY.md") or "/static"
            paths += [concrete, concrete + "/", concrete + "/memdir.css"]
        locations = []
        for path in paths:
            for prefix in ("", *HOSTILE_PATHS):
                query = f"token={TOKEN}" if options.token else ""
                status, headers = asgi_get(app, prefix + path, query, cookie=cookie)
                if 300 <= status < 400:
                    assert_same_origin(headers["location"])
                    locations.append(headers["location"])
        if options.token:  # every GET that carries the token is redirected without it
            assert len(locations) == len(paths) * (1 + len(HOSTILE_PATHS))
        else:  # the home page, and Starlette's trailing-slash redirect (absolute: made a path)
            assert "/search" in locations and "/index" in locations


def test_the_trailing_slash_redirect_is_a_path() -> None:
    # Starlette's own redirect is an absolute URL built from the Host header; the guard keeps
    # only its path.
    assert same_origin("http://evil.example:8765/search?q=1") == "/search?q=1"
    assert same_origin("//evil.example/x") == "/x"
    assert same_origin("/\\evil.example/x") == "/%5Cevil.example/x"
    assert same_origin("/files/memory/2026-11-28.md?lines=1-3") == (
        "/files/memory/2026-11-28.md?lines=1-3"
    )
    assert same_origin("/files/%E7%AC%94%E8%AE%B0.md") == "/files/%E7%AC%94%E8%AE%B0.md"


def test_a_redirect_keeps_the_path_the_route_saw(mem: Memory) -> None:
    app = create_app(mem, UIOptions(token=TOKEN, allowed_hosts=()))
    _, headers = asgi_get(app, "/files/memory/100%.md", f"token={TOKEN}")
    assert headers["location"] == "/files/memory/100%25.md"
    _, headers = asgi_get(app, "/files/memory/笔记.md", f"token={TOKEN}&lines=2")
    assert headers["location"] == "/files/memory/%E7%AC%94%E8%AE%B0.md?lines=2"


@pytest.mark.parametrize(
    ("host", "extra"), [("127.0.0.2", "127.0.0.2"), ("127.0.0.1", None), ("[::1]", None)]
)
def test_the_listening_address_is_an_accepted_host(mem: Memory, host: str, extra: str) -> None:
    assert loopback_hosts(host)[: len(LOOPBACK_NAMES)] == LOOPBACK_NAMES
    assert loopback_hosts(host)[len(LOOPBACK_NAMES) :] == ((extra,) if extra else ())
    sock, listening = plan(host, 0, writable=False, allow_remote=False, token=None)
    sock.close()
    shown = urlsplit(listening.url).netloc
    client = make_client(mem, listening.options, host=shown)
    assert client.get("/api/index", headers={"Host": shown}).status_code == 200
    # Other loopback addresses and hostile names are still refused (no DNS rebinding).
    for other in ("127.0.0.3:8765", "evil.example:8765"):
        assert client.get("/api/index", headers={"Host": other}).status_code == 400
