"""The ``memdir`` group, shared options and error handling.

The workspace: ``-w/--workspace PATH`` before the command (``memdir -w ~/notes search …``) or
after it (``memdir serve --workspace ~/notes``: the form MCP client configurations use), else
``MEMDIR_WORKSPACE``, else ``~/.memdir/workspace``; ``~`` is expanded in every form. Every
command gets the option from :class:`MemdirGroup`, so it is written once.

Errors: a :class:`~memdir.errors.MemdirError` becomes one line on stderr and exit 1; bad usage
exits 2 (click); anything unexpected prints one line too, or its traceback with
``MEMDIR_DEBUG=1``.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

import click

from memdir.config.settings import default_workspace
from memdir.errors import MemdirError

WORKSPACE_HELP = "Workspace folder (default: $MEMDIR_WORKSPACE or ~/.memdir/workspace)."


def _workspace_path(value: str | Path) -> Path:
    return Path(value).expanduser()


def _take_workspace(ctx: click.Context, param: click.Parameter, value: Path | None) -> None:
    """``--workspace`` given after a command: it wins over the one before it."""
    if value is not None:
        ctx.obj = _workspace_path(value)


def _add_workspace_option(command: click.Command) -> None:
    if any(isinstance(p, click.Option) and "--workspace" in p.opts for p in command.params):
        return
    command.params.append(
        click.Option(
            ["-w", "--workspace"],
            type=click.Path(file_okay=False, path_type=Path),
            expose_value=False,
            callback=_take_workspace,
            help=WORKSPACE_HELP,
        )
    )


#: Each command and the module that defines it, imported only when that command runs: a
#: ``memdir search`` never loads the chat agent, the LLM clients or the MCP SDK.
COMMAND_MODULES = {
    "chat": "memdir.cli.chat_cmds",
    "compact": "memdir.cli.chat_cmds",
    "daemon": "memdir.cli.daemon_cmds",
    "dream": "memdir.cli.dream_cmds",
    "forget": "memdir.cli.forget_cmds",
    "get": "memdir.cli.search_cmds",
    "hook": "memdir.cli.hook_cmds",
    "hooks": "memdir.cli.hook_cmds",
    "index": "memdir.cli.index_cmds",
    "init": "memdir.cli.index_cmds",
    "log": "memdir.cli.log_cmds",
    "remember": "memdir.cli.serve_cmds",
    "review": "memdir.cli.review_cmds",
    "search": "memdir.cli.search_cmds",
    "serve": "memdir.cli.serve_cmds",
    "status": "memdir.cli.index_cmds",
    "team": "memdir.cli.team_cmds",
    "ui": "memdir.cli.ui_cmds",
    "watch": "memdir.cli.serve_cmds",
}


class CommandGroup(click.Group):
    """A click group whose commands accept ``-w/--workspace`` after them too."""

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        _add_workspace_option(cmd)
        super().add_command(cmd, name)


class MemdirGroup(CommandGroup):
    """The ``memdir`` group: loads each command's module on demand, accepts ``-w/--workspace``
    after each of its commands, and turns memdir errors into one clear line and exit 1."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMAND_MODULES})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMAND_MODULES:
            importlib.import_module(COMMAND_MODULES[cmd_name])  # registers it on ``cli``
        return self.commands.get(cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemdirError as exc:
            if os.environ.get("MEMDIR_DEBUG") == "1":
                raise
            click.echo(f"memdir: error: {exc}", err=True)
            sys.exit(1)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            click.echo("memdir: interrupted", err=True)
            sys.exit(130)
        except Exception as exc:
            if os.environ.get("MEMDIR_DEBUG") == "1":
                raise
            click.echo(
                f"memdir: internal error: {type(exc).__name__}: {exc} "
                "(set MEMDIR_DEBUG=1 for a traceback)",
                err=True,
            )
            sys.exit(1)


@click.group(cls=MemdirGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "-w",
    "--workspace",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="MEMDIR_WORKSPACE",
    help=WORKSPACE_HELP,
)
@click.version_option(package_name="memdir", prog_name="memdir")
@click.pass_context
def cli(ctx: click.Context, workspace: Path | None) -> None:
    """memdir: long-term memory for AI agents, kept as plain Markdown files.

    Files are the truth; the SQLite index under .memdir/ is a cache rebuilt from them.
    """
    ctx.obj = _workspace_path(workspace) if workspace is not None else default_workspace()


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="memdir")
