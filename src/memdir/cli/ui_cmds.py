"""``memdir ui``: the local web inspector."""

from __future__ import annotations

import os
import sys
import threading
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING

import click

from memdir.cli.common import stdout
from memdir.cli.main import cli
from memdir.errors import MemdirError, ProviderUnavailable
from memdir.memory.facade import Memory

if TYPE_CHECKING:
    from memdir.ui.server import Listening

#: Starlette, uvicorn and Jinja2 are default dependencies: an install that lost one gets them
#: back with this.
UI_HINT = "pip install 'starlette>=0.40' 'uvicorn>=0.30' 'jinja2>=3.1' (or reinstall memdir)"


@cli.command("ui")
@click.option(
    "--port",
    type=click.IntRange(min=0, max=65535),
    default=8765,
    show_default=True,
    help="Port to listen on (0: any free port).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the inspector in a browser.")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; anything but loopback needs --allow-remote.",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow a non-loopback --host (every request needs the printed sign-in link's "
    "cookie, or $MEMDIR_UI_TOKEN when set, as everywhere).",
)
@click.option(
    "--writable",
    is_flag=True,
    help="Allow applying a dream run from the page (each apply still needs a confirmation).",
)
@click.pass_context
def ui_command(
    ctx: click.Context,
    port: int,
    open_browser: bool,
    host: str,
    allow_remote: bool,
    writable: bool,
) -> None:
    """Browse what the agent remembers and why, in a local web page.

    Search with each score's parts, the files with line anchors, the index, dreaming (recall
    counts, factor scores, gates, the MEMORY.md budget, a preview) and the history of automatic
    writes. Read-only unless --writable; listens on 127.0.0.1 only unless --allow-remote.
    The printed URL holds a one-time sign-in code: opening it gives that browser a session
    cookie; every page needs one ($MEMDIR_UI_TOKEN, when set, is a token that works every time).
    """
    try:
        from memdir.ui.server import plan, serve
    except ImportError as exc:
        raise ProviderUnavailable(f"`memdir ui` needs {exc.name}: {UI_HINT}") from exc
    workspace: Path = ctx.obj
    mode = "writable: a dream run can be applied after a confirmation" if writable else "read-only"
    if not allow_remote and host == "127.0.0.1":
        held = _in_service(workspace, port, writable, mode, open_browser)
        if held:
            return
    token = os.environ.get("MEMDIR_UI_TOKEN") or None
    sock, listening = plan(host, port, writable=writable, allow_remote=allow_remote, token=token)
    out = stdout()
    with Memory(workspace) as memory:

        def ready() -> None:
            out.print(f"memdir ui: {listening.url}", markup=False)
            out.print(f"  {memory.workspace.root} · {mode} · Ctrl-C to stop", markup=False)
            if token is not None:
                return  # the URL holds the fixed token: it works in any browser
            if _interactive():
                out.print(SIGN_IN_NOTE + "press Enter here for a new link")
                threading.Thread(
                    target=_links_on_enter, args=(listening,), name="memdir-ui-links", daemon=True
                ).start()
            else:
                out.print(SIGN_IN_NOTE + "restart memdir ui")

        serve(memory, sock, listening, on_ready=ready, open_browser=open_browser)


#: What the printed link is: a one-time sign-in (docs/design.md#interfaces).
SIGN_IN_NOTE = "  the link signs one browser in, once (a cookie); for another browser, "


def _interactive() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def _links_on_enter(listening: Listening) -> None:
    """A new sign-in link each time Enter is pressed (a standalone inspector: no other
    ``memdir ui`` can ask it for one)."""
    out = stdout()
    for _ in sys.stdin:
        base = listening.url.split("?", 1)[0]
        out.print(f"memdir ui: {base}?token={listening.options.access.issue()}", markup=False)


def _in_service(workspace: Path, port: int, writable: bool, mode: str, open_browser: bool) -> bool:
    """Have the per-user service serve the inspector, when one runs (it then shows the live
    index and embedding of its warm workspace), for as long as this command runs; whether it
    did (docs/design.md#the-per-user-service).

    Raises:
        MemdirError: the service stopped while it served the inspector.
    """
    import json
    from urllib.parse import quote

    from memdir.service import state
    from memdir.service.protocol import OFF_VALUES, post_and_hold

    if os.environ.get("MEMDIR_SERVICE", "").strip().lower() in OFF_VALUES:
        return False
    if os.environ.get("MEMDIR_UI_TOKEN"):
        return False  # a token was asked for: the inspector runs here, with it
    where = state.endpoint()
    if where is None or state.read_state() is None:
        return False
    root = quote(str(workspace.expanduser().resolve()), safe="/")
    path = f"/v1/ui?workspace={root}&port={port}&writable={int(writable)}"
    try:
        _, line, conn = post_and_hold(where[0], where[1], path, timeout=60.0)
    except OSError:
        return False
    try:
        url = json.loads(line)["url"] if conn is not None else None
    except (ValueError, KeyError, TypeError):
        url = None
    if conn is None or not isinstance(url, str):
        if conn is not None:
            conn.close()
        return False  # refused (a port taken, not a workspace): run here, which says why
    out = stdout()
    try:
        out.print(f"memdir ui: {url}", markup=False)
        out.print(f"  {workspace} · {mode} · served by the memdir service · Ctrl-C to stop")
        out.print(SIGN_IN_NOTE + "run memdir ui again")
        if open_browser:
            webbrowser.open(url)
        conn.settimeout(None)
        while conn.recv(4096):
            pass  # the service sends nothing more; it closes when it stops
    except KeyboardInterrupt:
        return True  # the connection closes: the service lets go of the inspector
    finally:
        conn.close()
    raise MemdirError("the memdir service stopped, and the inspector with it: run memdir ui again")
