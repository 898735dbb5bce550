"""Helpers shared by the command modules: opening Memory, consoles, JSON output.

The consoles never read markup: file names and note text are printed as they are (a path
holding ``[/x]`` or ``[bold]`` is data, not a style). Style with :func:`styled` instead.
Control characters in names and notes are shown escaped (:func:`visible`), so a file name
cannot move the cursor or send escape sequences to the terminal.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.text import Text

from memdir.memory import Memory

_CONTROL_RE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")
_CONTROL_NO_TAB_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def open_memory(ctx: click.Context) -> Memory:
    """The Memory of the workspace chosen by ``--workspace`` / ``MEMDIR_WORKSPACE``."""
    workspace: Path = ctx.obj
    return Memory(workspace)


def stdout() -> Console:
    return Console(highlight=False, soft_wrap=True, markup=False)


def stderr() -> Console:
    return Console(stderr=True, highlight=False, markup=False)


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
