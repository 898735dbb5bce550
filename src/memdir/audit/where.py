"""Where a workspace's audit records go: the git repository that holds it, or the log file.

Looked up from names only until a commit is made: :func:`git_worktree` does not load dulwich
(``memdir status`` uses it), :func:`git_trail` does.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memdir.audit.jsonl import JsonlTrail
from memdir.workspace.layout import Workspace

if TYPE_CHECKING:
    from memdir.audit.git import GitTrail


def git_worktree(workspace: Workspace) -> Path | None:
    """The nearest of the workspace folder and its parents that holds a ``.git`` (folder or
    file), where :func:`git_trail` opens the repository; None without one or with ``[audit]
    git = "off"``."""
    if workspace.audit_git == "off":
        return None
    root = workspace.root
    return next((p for p in (root, *root.parents) if (p / ".git").exists()), None)


def git_trail(workspace: Workspace) -> GitTrail | None:
    """The git trail of the workspace, or None (no repository, or ``[audit] git = "off"``)."""
    if git_worktree(workspace) is None:
        return None
    from memdir.audit.git import GitTrail  # dulwich loads only in a git workspace

    return GitTrail.discover(workspace.root, workspace.state_dir)


def log_trail(workspace: Workspace) -> JsonlTrail:
    return JsonlTrail(workspace.state_dir)


def repo_prefix(workspace: Workspace, worktree: Path) -> str:
    """The workspace's folder inside the working tree ``worktree`` (``notes/``, or empty)."""
    rel = workspace.root.relative_to(worktree).as_posix()
    return "" if rel == "." else rel + "/"


__all__ = ["git_trail", "git_worktree", "log_trail", "repo_prefix"]
