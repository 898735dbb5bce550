"""Running the inspector: bind a socket (loopback unless told otherwise), serve it with uvicorn.

The socket is bound before uvicorn starts, so ``--port 0`` can print the port it got and a port
in use is one clear error.
"""

from __future__ import annotations

import errno
import socket
import threading
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass

from memdir.errors import MemdirError
from memdir.memory.facade import Memory
from memdir.service.ports import listen_tcp
from memdir.ui.app import create_app
from memdir.ui.inspector import UIOptions
from memdir.ui.security import LOOPBACK_NAMES, is_loopback

DEFAULT_PORT = 8765


@dataclass(frozen=True)
class Listening:
    """Where the inspector listens, and the URL to open (with a one-time sign-in code, or the
    fixed token)."""

    host: str
    port: int
    url: str
    options: UIOptions


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port`` 0: any free port).

    Raises:
        MemdirError: the port is in use or the address cannot be bound.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        sock = listen_tcp(host.strip("[]"), port, family)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise MemdirError(
                f"port {port} is in use: choose another with --port, or --port 0 for any free one"
            ) from exc
        raise MemdirError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.set_inheritable(True)
    return sock


def plan(
    host: str, port: int, *, writable: bool, allow_remote: bool, token: str | None
) -> tuple[socket.socket, Listening]:
    """Check the host, bind it and decide the options.

    Every request needs a credential (:mod:`memdir.ui.security`): the URL holds a one-time
    sign-in code, or ``token`` (``MEMDIR_UI_TOKEN``) when one is given, which works every time.
    Beyond loopback the inspector needs ``allow_remote``.

    Raises:
        MemdirError: a non-loopback host without ``allow_remote``, or the bind failed.
    """
    local = is_loopback(host)
    if not local and not allow_remote:
        raise MemdirError(
            f"refusing to listen on {host}: the inspector shows private memory; it listens on "
            "127.0.0.1 only unless you pass --allow-remote"
        )
    options = UIOptions(
        writable=writable,
        token=token,
        allowed_hosts=loopback_hosts(host) if local else (),
    )
    sock = bind(host, port)
    bound_port = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    url = f"http://{shown}:{bound_port}/?token={token or options.access.issue()}"
    return sock, Listening(host, bound_port, url, options)


def loopback_hosts(host: str) -> tuple[str, ...]:
    """The Host names a loopback inspector accepts: :data:`LOOPBACK_NAMES` and the address it
    listens on (``--host 127.0.0.2`` prints ``http://127.0.0.2:…/``, and that URL must work)."""
    name = host.strip().strip("[]").lower()
    return LOOPBACK_NAMES if name in LOOPBACK_NAMES else (*LOOPBACK_NAMES, name)


def serve(
    memory: Memory,
    sock: socket.socket,
    listening: Listening,
    *,
    on_ready: Callable[[], None] | None = None,
    open_browser: bool = False,
) -> None:
    """Serve the inspector on ``sock`` until interrupted (Ctrl-C)."""
    import uvicorn

    app = create_app(memory, listening.options)
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="off", server_header=False
    )
    server = uvicorn.Server(config)

    def announce() -> None:
        while not server.started and not server.should_exit:
            threading.Event().wait(0.05)
        if server.started:
            if on_ready is not None:
                on_ready()
            if open_browser:
                webbrowser.open(listening.url)

    threading.Thread(target=announce, name="memdir-ui-ready", daemon=True).start()
    server.run(sockets=[sock])


__all__ = ["DEFAULT_PORT", "Listening", "bind", "loopback_hosts", "plan", "serve"]
