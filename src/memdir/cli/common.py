"""Helpers shared by the command modules: opening Memory, consoles, JSON output.

The consoles never read markup: file names and note text are printed as they are (a path
holding ``[/x]`` or ``[bold]`` is data, not a style). Style with :func:`styled` instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.text import Text

from memdir.memory import Memory


def open_memory(ctx: click.Context) -> Memory:
    """The Memory of the workspace chosen by ``--workspace`` / ``MEMDIR_WORKSPACE``."""
    workspace: Path = ctx.obj
    return Memory(workspace)


def stdout() -> Console:
    return Console(highlight=False, soft_wrap=True, markup=False)


def stderr() -> Console:
    return Console(stderr=True, highlight=False, markup=False)


def styled(*parts: str | tuple[str, str]) -> Text:
    """A line from plain strings and ``(text, style)`` pairs; nothing in it is read as markup.

    ``styled(("note", "yellow"), f": {warning}")`` prints a yellow "note" then the warning.
    """
    return Text.assemble(*parts)


def print_json(data: Any) -> None:
    """Print one JSON document (UTF-8, not ASCII-escaped) on stdout."""
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))
