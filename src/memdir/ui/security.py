"""What keeps ``memdir ui`` private: loopback only, a token for anything else, no cross-site
writes, and pages that load nothing from elsewhere.

:class:`Guard` is a plain ASGI middleware in front of every route:

- **Host header.** Bound to loopback, only ``127.0.0.1``, ``localhost``, ``[::1]`` and the
  loopback address given with ``--host`` (``127.0.0.2``) are accepted as the request's Host, so
  a web page cannot reach the inspector through DNS rebinding (a hostile name that resolves to
  127.0.0.1).
- **Credential.** Every request, for every page, ``/api/`` route and static file, needs one
  (a second Unix user read every note through an inspector on 127.0.0.1: issue 35). The URL
  ``memdir ui`` prints holds a one-time sign-in code (``?token=…``,
  :class:`~memdir.ui.access.Access`): the first request that brings it gets a session as the
  ``memdir_ui_<port>`` cookie (HttpOnly, SameSite=Strict) and is redirected to the same URL
  without it; the code is then spent. A fixed token (``MEMDIR_UI_TOKEN``) is let in as
  ``Authorization: Bearer …``, as the cookie, or in ``?token=…``, which sets the cookie.
  Without one: 401.
- **Writes.** Any method but GET/HEAD needs the per-process CSRF token in the
  ``X-Memdir-CSRF`` header (a cross-site form cannot set a header) and, when the browser sends
  them, a same-origin ``Origin`` and ``Sec-Fetch-Site``.
- **Redirects** stay on this origin: every ``Location`` the inspector sends is a path with one
  leading slash (:func:`same_origin`), never ``//host/…`` or a URL with a scheme, whatever the
  request's path was (``//evil.example/x?token=…`` must not send the browser to evil.example).
- **Headers.** A Content-Security-Policy that allows only this origin (no inline script, no
  remote font, image or script), no framing, no referrer, no caching.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable
from urllib.parse import quote, urlencode, urlsplit

from starlette.datastructures import Headers
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memdir.ui.access import Access

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
#: The token cookie's name, followed by the port (cookies do not tell ports apart, and two
#: inspectors on one host have two tokens).
TOKEN_COOKIE = "memdir_ui"
CSRF_HEADER = "x-memdir-csrf"
SAFE_METHODS = frozenset({"GET", "HEAD"})
#: What :func:`same_origin` leaves as it is in a path (RFC 3986's path characters and escapes).
_PATH_CHARS = "/%:@!$&'()*+,;=~-._"
#: ... and in a query.
_QUERY_CHARS = _PATH_CHARS + "?"

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``."""
    name = host.strip("[]")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def same_origin(location: str) -> str:
    """``location`` as a path on this origin, for a redirect: its scheme and host dropped, one
    leading slash, and the characters browsers read as slashes or drop (``\\``, tab, newline)
    percent-encoded, so it cannot point elsewhere.

    A path starting with ``//`` or ``/\\`` is read by browsers as the address of another
    host (``//evil.example/x``). Slashes and existing escapes are left as they are, so the
    path the route sees is unchanged.
    """
    parts = urlsplit(location)
    path = "/" + quote(parts.path, safe=_PATH_CHARS).lstrip("/")
    query = quote(parts.query, safe=_QUERY_CHARS)
    return path + (f"?{query}" if query else "")


def host_name(header: str) -> str:
    """The name part of a Host header (``[::1]:8765`` → ``::1``, ``Localhost:80`` →
    ``localhost``)."""
    value = header.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class Guard:
    """The ASGI middleware described in the module docstring.

    Args:
        app: the application behind it.
        csrf: the token writes must carry in ``X-Memdir-CSRF``.
        access: the sign-in codes and sessions.
        token: a fixed token that also lets a request in (``MEMDIR_UI_TOKEN``).
        allowed_hosts: Host names accepted; empty accepts any (remote access with a token).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        csrf: str,
        access: Access,
        token: str | None = None,
        allowed_hosts: Iterable[str] = LOOPBACK_NAMES,
    ) -> None:
        self.app = app
        self.csrf = csrf
        self.access = access
        self.token = token
        self.allowed_hosts = frozenset(h.lower().strip("[]") for h in allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.check(HTTPConnection(scope), scope.get("method", "GET"))

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (name, same_origin(value.decode("latin-1")).encode("latin-1"))
                    if name.lower() == b"location"
                    else (name, value)
                    for name, value in message.get("headers", [])
                ]
                present = {name.lower() for name, _ in headers}
                headers.extend(h for h in SECURITY_HEADERS if h[0] not in present)
                if b"cache-control" not in present:
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        if refusal is not None:
            await refusal(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    def check(self, conn: HTTPConnection, method: str) -> Response | None:
        """The response that refuses this request, or None to let it through."""
        headers = conn.headers
        host = host_name(headers.get("host", ""))
        if self.allowed_hosts and host not in self.allowed_hosts:
            return _refuse(
                conn,
                400,
                f"unexpected Host header {host!r}: open the inspector "
                "at the address `memdir ui` printed",
            )
        signed_in = self._signed_in(conn)
        given = conn.query_params.get("token")
        if given is not None and method in SAFE_METHODS:
            cookie = self._sign_in(given)
            if cookie is not None or signed_in:  # a spent link in a signed-in browser: fine
                return _drop_token_from_url(conn, cookie)
            return _refuse(
                conn,
                401,
                "this sign-in link was used already, or is not this inspector's: "
                "run `memdir ui` again for a new one",
            )
        if not signed_in:
            return _refuse(
                conn,
                401,
                "this inspector needs the sign-in link `memdir ui` printed "
                "(http://…/?token=…): open it once in this browser",
            )
        if method not in SAFE_METHODS:
            return self._check_write(conn, headers)
        return None

    def _sign_in(self, given: str) -> str | None:
        """The cookie a ``?token=`` value sets: the fixed token itself, or the new session a
        sign-in code opens; None when it is neither."""
        if self.token is not None and _same(given, self.token):
            return self.token
        return self.access.sign_in(given)

    def _signed_in(self, conn: HTTPConnection) -> bool:
        cookie = conn.cookies.get(token_cookie(conn), "")
        if self.token is not None:
            auth = conn.headers.get("authorization", "")
            if auth.lower().startswith("bearer ") and _same(auth[7:].strip(), self.token):
                return True
            if _same(cookie, self.token):
                return True
        return self.access.allows(cookie)

    def _check_write(self, conn: HTTPConnection, headers: Headers) -> Response | None:
        if not _same(headers.get(CSRF_HEADER, ""), self.csrf):
            return _refuse(conn, 403, "a write needs the page's CSRF token: reload the page")
        origin = headers.get("origin")
        if origin is not None and origin != f"{conn.url.scheme}://{headers.get('host', '')}":
            return _refuse(conn, 403, f"cross-origin write refused (Origin {origin})")
        site = headers.get("sec-fetch-site")
        if site is not None and site not in ("same-origin", "none"):
            return _refuse(conn, 403, f"cross-site write refused (Sec-Fetch-Site {site})")
        return None


def token_cookie(conn: HTTPConnection) -> str:
    """The name of the token cookie for the port ``conn`` came to (``memdir_ui_8765``)."""
    return f"{TOKEN_COOKIE}_{conn.url.port or 80}"


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


def _refuse(conn: HTTPConnection, status: int, message: str) -> Response:
    if conn.url.path.startswith("/api/"):
        return JSONResponse({"error": message}, status_code=status)
    return PlainTextResponse(f"memdir ui: {message}\n", status_code=status)


def _drop_token_from_url(conn: HTTPConnection, cookie: str | None) -> Response:
    """A redirect to the same URL without ``?token=``, setting ``cookie`` when given."""
    kept = urlencode([(k, v) for k, v in conn.query_params.multi_items() if k != "token"])
    # The path as the route saw it (decoded), encoded again: a literal "%" becomes "%25".
    path = quote(conn.scope["path"], safe=_PATH_CHARS.replace("%", ""))
    target = same_origin(path + (f"?{kept}" if kept else ""))
    response = RedirectResponse(target, status_code=303)
    if cookie is not None:
        name = token_cookie(conn)
        response.set_cookie(name, cookie, httponly=True, samesite="strict", path="/")
    return response


__all__ = [
    "CONTENT_SECURITY_POLICY",
    "CSRF_HEADER",
    "LOOPBACK_NAMES",
    "TOKEN_COOKIE",
    "Guard",
    "host_name",
    "is_loopback",
    "same_origin",
    "token_cookie",
]
