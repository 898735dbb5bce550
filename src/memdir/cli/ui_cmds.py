"""``memdir ui``: the local web inspector."""

from __future__ import annotations

import os
from pathlib import Path

import click

from memdir.cli.common import stdout
from memdir.cli.main import cli
from memdir.errors import ProviderUnavailable
from memdir.memory import Memory

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
    help="Allow a non-loopback --host; every request then needs the printed token "
    "($MEMDIR_UI_TOKEN, or a new random one).",
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
    """
    try:
        from memdir.ui.server import plan, serve
    except ImportError as exc:
        raise ProviderUnavailable(f"`memdir ui` needs {exc.name}: {UI_HINT}") from exc
    workspace: Path = ctx.obj
    if not allow_remote and host == "127.0.0.1" and _in_service(workspace, port, writable):
        return
    token = os.environ.get("MEMDIR_UI_TOKEN") or None
    sock, listening = plan(host, port, writable=writable, allow_remote=allow_remote, token=token)
    out = stdout()
    mode = "writable: a dream run can be applied after a confirmation" if writable else "read-only"
    with Memory(workspace) as memory:

        def ready() -> None:
            out.print(f"memdir ui: {listening.url}", markup=False)
            out.print(f"  {memory.workspace.root} · {mode} · Ctrl-C to stop", markup=False)

        serve(memory, sock, listening, on_ready=ready, open_browser=open_browser)


def _in_service(workspace: Path, port: int, writable: bool) -> bool:
    """Have the per-user service serve the inspector, when one runs (it then shows the live
    index and embedding of its warm workspace); whether it does."""
    import json
    from urllib.parse import quote

    from memdir.service import state
    from memdir.service.protocol import OFF_VALUES, post

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
        status, body = post(where[0], where[1], path, b"", timeout=60.0)
        url = json.loads(body)["url"] if status == 200 else None
    except (OSError, ValueError, KeyError):
        return False
    if not isinstance(url, str):
        return False
    mode = "writable: a dream run can be applied after a confirmation" if writable else "read-only"
    out = stdout()
    out.print(f"memdir ui: {url}", markup=False)
    out.print(f"  {workspace} · {mode} · served by the memdir service (memdir daemon stop)")
    return True
