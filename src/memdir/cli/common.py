"""Helpers shared by the command modules: opening Memory, consoles, JSON output.

The consoles never read markup: file names and note text are printed as they are (a path
holding ``[/x]`` or ``[bold]`` is data, not a style). Style with :func:`styled` instead.
Control characters in names and notes are shown escaped (:func:`visible`), so a file name
cannot move the cursor or send escape sequences to the terminal.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.text import Text

from memdir.memory.facade import Memory

_CONTROL_RE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")
_CONTROL_NO_TAB_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


#: Set by the per-user service while it runs a command for a client
#: (:mod:`memdir.service.commands`): lends the warm :class:`Memory` of a workspace it serves,
#: open, for the command's duration (the command does not close it).
LENDER: ContextVar[Callable[[Path, str], contextlib.AbstractContextManager[Memory]] | None] = (
    ContextVar("memdir_lender", default=None)
)
#: The client's environment while the service runs its command: the consoles take their
#: colours and width from it, not from the service's.
CLIENT_ENV: ContextVar[Mapping[str, str] | None] = ContextVar("memdir_client_env", default=None)


@contextlib.contextmanager
def open_memory(ctx: click.Context | Path, *, scope: str = "private") -> Iterator[Memory]:
    """The Memory of the workspace chosen by ``--workspace`` / ``MEMDIR_WORKSPACE`` (or the
    path given), closed after the ``with``; in the service, its warm one, left open."""
    workspace: Path = ctx.obj if isinstance(ctx, click.Context) else ctx
    lender = LENDER.get()
    if lender is not None:
        with lender(workspace, scope) as memory:
            yield memory
        return
    with Memory(workspace, scope=scope) as memory:
        yield memory


def made_default_workspace(path: Path) -> bool:
    """Create memdir's own default workspace (``$MEMDIR_HOME/workspace``) the first time an
    agent uses it: the Claude Code plugin's MCP server and hooks run on it, and a person who
    installs the plugin should not meet "Failed to connect" or lose a session's archive for
    want of a ``memdir init``. True when it was created now. Any other missing folder is left
    to the error that says to run ``memdir init``: memdir makes no folder a person named."""
    from memdir.config.settings import memdir_home
    from memdir.workspace.templates import init_workspace

    default = memdir_home() / "workspace"
    if path.expanduser() != default or os.path.lexists(default):
        return False
    init_workspace(default)
    return True


def stdout() -> Console:
    return Console(highlight=False, soft_wrap=True, markup=False, _environ=_environ())


def stderr() -> Console:
    return Console(stderr=True, highlight=False, markup=False, _environ=_environ())


def _environ() -> Mapping[str, str]:
    env = CLIENT_ENV.get()
    return env if env is not None else os.environ


def visible(text: str, *, tabs: bool = False) -> str:
    """``text`` with control characters shown as ``\\xNN`` (newlines kept; tabs kept when
    ``tabs``, as in note text, else escaped, as in a file name)."""
    pattern = _CONTROL_NO_TAB_RE if tabs else _CONTROL_RE
    return pattern.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def styled(*parts: str | tuple[str, str]) -> Text:
    """A line from plain strings and ``(text, style)`` pairs; nothing in it is read as markup
    and control characters are shown escaped (:func:`visible`).

    ``styled(("note", "yellow"), f": {warning}")`` prints a yellow "note" then the warning.
    """
    return Text.assemble(
        *(visible(p) if isinstance(p, str) else (visible(p[0]), p[1]) for p in parts)
    )


def print_json(data: Any) -> None:
    """Print one JSON document (UTF-8, not ASCII-escaped) on stdout."""
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))
