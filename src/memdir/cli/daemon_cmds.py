"""``memdir daemon start|stop|status|run|token``: the per-user service
(docs/design.md#the-per-user-service)."""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import quote

import click

from memdir.cli.main import CommandGroup, cli
from memdir.config.settings import load_config
from memdir.service import daemon
from memdir.service import state as files
from memdir.service.ports import service_port


@cli.group("daemon", cls=CommandGroup)
def daemon_group() -> None:
    """The per-user service: one warm memdir that answers the CLI, Claude Code's hooks and
    MCP over HTTP in milliseconds.

    It keeps each workspace it is asked about open (model, index, file watcher, background
    embedding) and listens on 127.0.0.1 with a per-user token. `memdir search|get|remember|
    status|hook` use it when it runs, with the same output, and run by themselves when it
    does not.
    """


@daemon_group.command("run")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    help="Default: [service] port (0: this home's last port, else 8766, else a free one); "
    "0 here: any free port.",
)
@click.option(
    "--idle-minutes",
    type=click.FloatRange(1, 10080),
    help="Close a workspace unused this long. Default: [service] idle_minutes (30).",
)
@click.option("--exit-when-idle", is_flag=True, help="Stop once no workspace was used that long.")
def run_command(port: int | None, idle_minutes: float | None, exit_when_idle: bool) -> None:
    """Run the service in the foreground until stopped (what a systemd or launchd unit runs)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    daemon.run(port=port, idle_minutes=idle_minutes, exit_when_idle=exit_when_idle)


@daemon_group.command("start")
@click.pass_context
def start_command(ctx: click.Context) -> None:
    """Start the service in the background (nothing to do when it runs)."""
    found = daemon.start()
    click.echo(f"memdir service {found.get('version')} running (pid {found.get('pid')})")
    _print_mcp_line(Path(ctx.obj))


@daemon_group.command("stop")
def stop_command() -> None:
    """Stop the service."""
    pid = daemon.stop()
    click.echo("no memdir service was running" if pid is None else f"stopped (pid {pid})")


@daemon_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the service's state as JSON.")
@click.pass_context
def status_command(ctx: click.Context, as_json: bool) -> None:
    """Whether the service runs, where, and the workspaces it keeps warm."""
    found = daemon.health()
    running = files.read_state()
    if as_json:
        from memdir.cli.common import print_json

        port = running.port if running else None
        print_json({"running": found is not None, "port": port, **(found or {})})
        return
    if found is None or running is None:
        click.echo("no memdir service is running (start one with `memdir daemon start`)")
        return
    click.echo(
        f"memdir service {found.get('version')} on 127.0.0.1:{running.port} "
        f"(pid {found.get('pid')}, since {running.started})"
    )
    served = found.get("served") or []
    most = found.get("max_workspaces")
    if not served:
        click.echo("no workspace open")
    elif isinstance(served, list):
        click.echo(f"{len(served)} workspace(s) open" + (f" (at most {most})" if most else ""))
    for item in served if isinstance(served, list) else []:
        click.echo(f"  {item['workspace']} ({item['scope']})")
    listed = found.get("inspectors")
    for ui in listed if isinstance(listed, list) else []:
        mode = "writable" if ui.get("writable") else "read-only"
        click.echo(
            f"inspector {ui.get('url')} of {ui.get('workspace')} ({mode}), held by "
            f"{ui.get('held_by')} `memdir ui`: it stops with the last of them"
        )
    _print_mcp_line(Path(ctx.obj))


@daemon_group.command("token")
@click.option("--rotate", is_flag=True, help="Make a new one (set hooks and MCP entries up again).")
def token_command(rotate: bool) -> None:
    """Print the per-user token (kept in $MEMDIR_HOME/service/token, mode 0600)."""
    click.echo(files.token(rotate=rotate))


#: The name the printed MCP line gives the HTTP server (``memdir`` is the stdio server's).
MCP_HTTP_NAME = "memdir-http"


def _print_mcp_line(workspace: Path) -> None:
    """The `claude mcp add` line for a workspace that exists: ``workspace`` (the one named
    with -w, MEMDIR_WORKSPACE or the default), else the current folder when it is one."""
    from memdir.workspace.layout import is_workspace

    port = service_port() or load_config().service.port
    chosen = next(
        (w for w in (workspace.expanduser(), Path.cwd()) if w.is_dir() and is_workspace(w)), None
    )
    if chosen is None:
        click.echo(
            f"MCP over HTTP: no workspace at {workspace} (create one with `memdir init PATH`, "
            "then run `memdir -w PATH daemon status` for the `claude mcp add` line)"
        )
        return
    url = mcp_url(port, chosen.resolve())
    click.echo(
        f"MCP over HTTP (Claude Code): claude mcp add --transport http {MCP_HTTP_NAME} "
        f"'{url}' --header \"Authorization: Bearer $(memdir daemon token)\""
    )


def mcp_url(port: int, workspace: Path) -> str:
    return f"http://127.0.0.1:{port}/mcp?workspace={quote(str(workspace), safe='/')}"
