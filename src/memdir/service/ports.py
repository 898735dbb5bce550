"""Which TCP port a home's service listens on (docs/design.md#the-per-user-service).

Many users, and many ``MEMDIR_HOME`` folders of one user, share a machine's loopback ports, so
the port is a property of the home, not of the machine:

- ``[service] port = N`` (or ``memdir daemon run --port N``): that port and no other; when
  something else holds it, the start fails at once and says so;
- ``[service] port = 0``, the default: the port this home's service used last (kept in
  ``$MEMDIR_HOME/service/port``), else :data:`PREFERRED_PORT`, else any free port; the one bound
  is kept for next time, so the HTTP entries written for Claude Code keep working.

The CLI never needs the port (it uses the Unix socket); everything that does (``memdir hooks
install claude-code --http``, the MCP line ``memdir daemon start`` prints, OpenClaw's plugin)
reads the running service's port from ``service.json``, else :func:`recorded_port`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
from pathlib import Path

from memdir.errors import MemdirError
from memdir.workspace.fileio import atomic_write

#: The port tried first by a home that has none of its own yet (the inspector's is 8765).
PREFERRED_PORT = 8766
#: The file under ``$MEMDIR_HOME/service/`` that keeps the home's port.
PORT_FILE = "port"


def bind_service_port(folder: Path, configured: int, *, exact: bool = False) -> socket.socket:
    """A listening socket on 127.0.0.1 for the service whose files are in ``folder``; the port
    bound is kept in ``folder`` (:func:`recorded_port`).

    Args:
        folder: ``$MEMDIR_HOME/service``.
        configured: ``[service] port``; 0 chooses (see the module docstring).
        exact: ``configured`` came from ``--port``: that port, 0 meaning any free one.

    Raises:
        MemdirError: a configured port is taken, or nothing can be bound.
    """
    if configured or exact:
        sock = _bind(configured, why=_taken(configured))
        _record(folder, int(sock.getsockname()[1]))
        return sock
    for port in dict.fromkeys(p for p in (recorded_port(folder), PREFERRED_PORT) if p):
        with contextlib.suppress(OSError):
            sock = _listen(port)
            _record(folder, port)
            return sock
    sock = _bind(0, why="no free port on 127.0.0.1")
    _record(folder, int(sock.getsockname()[1]))
    return sock


def service_port(home: Path | None = None) -> int | None:
    """The port a client should use: the running service's (``service.json``), else the one
    this home's service used last; None when no service ever ran for this home."""
    from memdir.service import state

    running = state.read_state(home)
    if running is not None:
        return running.port
    return recorded_port(state.folder(home))


def recorded_port(folder: Path) -> int | None:
    """The port this home's service used last, or None."""
    try:
        value = int((folder / PORT_FILE).read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None
    return value if 1024 <= value <= 65535 else None


def _taken(port: int) -> str:
    return (
        f"127.0.0.1:{port} ([service] port) is taken by another process (another user's or "
        "another MEMDIR_HOME's service, or any program): set [service] port = 0 in "
        "$MEMDIR_HOME/config.toml to let memdir choose a free one, or choose another"
    )


def _bind(port: int, *, why: str) -> socket.socket:
    try:
        return _listen(port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise MemdirError(why) from exc
        raise MemdirError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from exc


def _listen(port: int) -> socket.socket:
    sock = listen_tcp("127.0.0.1", port)
    sock.set_inheritable(True)
    return sock


def listen_tcp(
    host: str, port: int, family: socket.AddressFamily = socket.AF_INET
) -> socket.socket:
    """A listening TCP socket whose connections send without Nagle's delay.

    ``socket.create_server`` makes its socket with protocol 0, and asyncio turns on TCP_NODELAY
    only for sockets made as IPPROTO_TCP: a kept-alive HTTP connection then waited for the
    client's delayed ACK between a response's header and body, 40 ms a request (a memory_get
    took 44 ms through the service, 2.9 ms with the connection closed after it).

    Raises:
        OSError: the address cannot be bound.
    """
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        if os.name == "posix":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen()
    except BaseException:
        sock.close()
        raise
    return sock


def _record(folder: Path, port: int) -> None:
    if recorded_port(folder) != port:
        with contextlib.suppress(OSError):
            atomic_write(folder / PORT_FILE, f"{port}\n")
