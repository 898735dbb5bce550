"""Which browser origins may call the service over TCP (docs/design.md#the-per-user-service).

A request from a web page carries an ``Origin`` header; MCP's streamable HTTP transport asks a
server to check it (a page the user visits must not reach a local server). The service's
clients are programs (Claude Code, OpenClaw, the MCP SDKs), which send no ``Origin``, and the
inspector, served from the loopback address. So a request without ``Origin`` passes on to the
token check, and one with an ``Origin`` passes only when it is a loopback origin
(``http://127.0.0.1[:port]``, ``http://localhost[:port]``, ``http://[::1][:port]``).
"""

from __future__ import annotations

from urllib.parse import urlsplit

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def origin_allowed(origin: bytes | None) -> bool:
    """Whether a request with this ``Origin`` header (None: none sent) may go on."""
    if origin is None:
        return True
    text = origin.decode("latin-1").strip()
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 (a malformed port raises here)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and parts.hostname in LOOPBACK_HOSTS
