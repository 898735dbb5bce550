"""Where an index lives (docs/design.md#index): the folder of a workspace's SQLite index, and
the id a workspace has in a shared database."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from memdir.config.settings import memdir_home
from memdir.workspace.layout import Workspace


def default_index_dir(workspace: Workspace) -> tuple[Path, str | None]:
    """The folder for the index and its lock, and a note when it is not the workspace's own."""
    state = workspace.state_dir
    try:
        state.mkdir(exist_ok=True)
        probe = state / f".probe-{os.getpid()}"
        probe.touch()
        probe.unlink()
        return state, None
    except OSError:
        digest = hashlib.sha256(str(workspace.root).encode()).hexdigest()[:16]
        fallback = memdir_home() / "indexes" / digest
        fallback.mkdir(parents=True, exist_ok=True)
        return fallback, f"workspace is not writable: index kept in {fallback}"


def default_workspace_id(workspace: Workspace) -> str:
    """A stable id for the workspace folder: the first 16 hex digits of the sha256 of its path.

    Hosts that share one memory through a database but keep the files at different paths set
    ``[index] workspace_id`` to the same value instead.
    """
    return hashlib.sha256(str(workspace.root).encode("utf-8")).hexdigest()[:16]


__all__ = ["default_index_dir", "default_workspace_id"]
