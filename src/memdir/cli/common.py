"""Helpers shared by the command modules: opening Memory, consoles, JSON output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from memdir.memory import Memory


def open_memory(ctx: click.Context) -> Memory:
    """The Memory of the workspace chosen by ``--workspace`` / ``MEMDIR_WORKSPACE``."""
    workspace: Path = ctx.obj
    return Memory(workspace)


def stdout() -> Console:
    return Console(highlight=False, soft_wrap=True)


def stderr() -> Console:
    return Console(stderr=True, highlight=False)


def print_json(data: Any) -> None:
    """Print one JSON document (UTF-8, not ASCII-escaped) on stdout."""
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))
