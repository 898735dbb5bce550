"""``memdir serve`` (MCP over stdio), ``memdir watch`` and ``memdir remember``."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from pathlib import Path

import click

from memdir.cli.common import (
    made_default_workspace,
    open_memory,
    print_json,
    stderr,
    stdout,
    styled,
)
from memdir.cli.main import cli
from memdir.index.background import EmbedProgress
from memdir.index.sync import SyncReport
from memdir.lifecycle.write import SECTIONS
from memdir.memory.facade import SCOPES, Memory


@cli.command("serve")
@click.option(
    "--scope",
    type=click.Choice(SCOPES),
    default="private",
    show_default=True,
    help="private: the owner's sessions; shared: group chats, MEMORY.md and USER.md hidden.",
)
@click.option("--no-watch", is_flag=True, help="Do not watch the files (searches still sync).")
@click.pass_context
def serve_command(ctx: click.Context, scope: str, no_watch: bool) -> None:
    """Run the MCP server over stdio (tools memory_search, memory_get, memory_write).

    Point your MCP client at `memdir serve --workspace PATH` (a workspace made by `memdir
    init`); see the README's "MCP setup". Chunks without a vector are embedded in the
    background from start-up, newest files first; searches never wait for it.
    """
    from memdir.mcp.server import serve_stdio

    workspace: Path = ctx.obj
    if made_default_workspace(workspace):
        click.echo(f"memdir serve: created the default workspace {workspace}", err=True)
    # stdout is the protocol channel: anything a provider prints while loading goes to stderr.
    with contextlib.redirect_stdout(sys.stderr):
        memory = Memory(workspace, scope=scope)
    with memory:
        memory.start_background_embedding()
        serve_stdio(memory, watch=not no_watch)


@cli.command("watch")
@click.option(
    "--debounce",
    type=click.FloatRange(min=0.1, max=60.0),
    default=1.5,
    show_default=True,
    help="Seconds of quiet after a change before the index is synced.",
)
@click.pass_context
def watch_command(ctx: click.Context, debounce: float) -> None:
    """Keep the index current: sync after Markdown files change, and embed pending chunks in
    the background (newest files first), until Ctrl-C."""
    from memdir.watch import WorkspaceWatcher

    workspace: Path = ctx.obj
    out, err = stdout(), stderr()

    def synced(report: SyncReport) -> None:
        if report.changed or report.embedded:
            out.print(
                f"synced: {report.added} new, {report.updated} changed, {report.removed} "
                f"removed; {report.chunks_written} chunks, {report.embedded} embedded"
            )
        for warning in report.warnings:
            err.print(styled(("warning", "yellow"), f": {warning}"))

    def failed(exc: Exception) -> None:
        err.print(styled(("sync failed", "red"), f": {exc}"))

    with Memory(workspace) as memory:
        watcher = WorkspaceWatcher(memory, debounce=debounce, on_sync=synced, on_error=failed)
        shown: tuple[int, str | None] | None = None
        worker = None
        try:
            out.print(f"watching {memory.workspace.root} (Ctrl-C to stop)")
            watcher.start()
            worker = memory.start_background_embedding()
            while watcher.running:
                time.sleep(0.5)
                if worker is not None:
                    shown = _show_embedding(out.print, worker.progress(), shown)
        except KeyboardInterrupt:
            pass
        finally:
            watcher.stop()
            if worker is not None:
                # Ctrl-C does not wait for a batch still loading its models (many seconds on a
                # busy machine): its chunks stay pending, and the index is whole either way.
                worker.stop(timeout=STOP_WAIT_S)
        out.print("stopped")


#: Seconds Ctrl-C waits for the background embedding's batch in progress.
STOP_WAIT_S = 2.0


def _show_embedding(
    say: Callable[[str], object], progress: EmbedProgress, shown: tuple[int, str | None] | None
) -> tuple[int, str | None]:
    """Print the background embedding's progress when it moved by a batch or more."""
    state = (progress.embedded, progress.error)
    if state == shown or (shown is None and not progress.embedded and not progress.error):
        return shown or state
    if progress.error:
        say(f"embedding paused: {progress.error}")
    elif progress.pending:
        say(f"embedding: {progress.embedded} done, {progress.describe()}")
    else:
        say(f"embedding: {progress.embedded} done, nothing pending")
    return state


@cli.command("remember")
@click.argument("text")
@click.option(
    "-s",
    "--section",
    type=click.Choice(SECTIONS),
    help="Add to this MEMORY.md section instead of today's daily log.",
)
@click.option(
    "--daily",
    is_flag=True,
    help="Append to today's daily log memory/YYYY-MM-DD.md (the default without --section).",
)
@click.option("--json", "as_json", is_flag=True, help="Print {path, line, written, ...} as JSON.")
@click.pass_context
def remember_command(
    ctx: click.Context, text: str, section: str | None, daily: bool, as_json: bool
) -> None:
    """Save a fact: append it to today's daily log, or add it to a MEMORY.md section.

    A fact already there (exactly, or nearly: same words) is skipped and reported.
    """
    if section is not None and daily:
        raise click.UsageError("--section writes to MEMORY.md; it cannot be used with --daily")
    with open_memory(ctx) as memory:
        result = memory.write(
            text, target="memory" if section else "daily", section=section, via="memdir remember"
        )
    if as_json:
        print_json(result.to_dict())
    elif result.written:
        stdout().print(f"remembered in {result.citation}")
    else:
        stdout().print(result.reason)
