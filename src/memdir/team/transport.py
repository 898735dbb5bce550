"""Fetching from and pushing to a team's remote with the ``git`` program
(docs/design.md#team-memory: why git's own transport, and memdir's own merge).

git reaches every remote a person's git reaches — a bare repository on disk, ``ssh://``,
``git@host:path``, ``https://`` with their credential helper, ``insteadOf`` rewrites — and
cleans up its own lock files when it stops; memdir merges in objects itself. Every call has a
time limit, never prompts (``GIT_TERMINAL_PROMPT=0``, ssh in batch mode) and runs no hook
(``core.hooksPath`` pointed at nothing).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from memdir.errors import WorkspaceError

#: How long one fetch or push may take.
GIT_TIMEOUT_S = 120.0
#: Where a fetched branch is kept (a ref of memdir's own, so a person's remote-tracking
#: branches move only as their own ``git fetch`` moves them).
FETCHED_REF = "refs/memdir/team/{branch}"


@dataclass(frozen=True)
class Pushed:
    """What a push did: ``ok``; else ``rejected`` (the remote moved on: fetch and merge again)
    or another failure, with git's words."""

    ok: bool
    rejected: bool = False
    message: str = ""


def git_program() -> str:
    """The ``git`` program.

    Raises:
        WorkspaceError: git is not installed.
    """
    found = shutil.which("git")
    if found is None:
        raise WorkspaceError(
            "memdir team needs the git program to reach the remote: install git "
            "(apt install git, brew install git, or git-scm.com)"
        )
    return found


def _run(worktree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_SSH_COMMAND": os.environ.get("GIT_SSH_COMMAND", "ssh -o BatchMode=yes"),
        "LC_ALL": "C",
    }
    try:
        return subprocess.run(
            [git_program(), "-c", "core.hooksPath=/dev/null", "-C", str(worktree), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            env=env,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise WorkspaceError(
            f"git {args[0]} took longer than {GIT_TIMEOUT_S:.0f} s; is the remote reachable?"
        ) from exc


def fetch(worktree: Path, remote: str, branch: str) -> str | None:
    """Fetch ``branch`` of ``remote`` (a remote's name or any URL or path git takes) into
    :data:`FETCHED_REF`; returns its commit, or None when the remote has no such branch yet.

    Raises:
        WorkspaceError: git failed (the remote cannot be reached, authentication…).
    """
    ref = FETCHED_REF.format(branch=branch)
    done = _run(worktree, "fetch", "--no-tags", "--quiet", remote, f"+refs/heads/{branch}:{ref}")
    if done.returncode != 0:
        text = done.stderr.strip()
        if "couldn't find remote ref" in text:
            return None
        raise WorkspaceError(f"git fetch from {remote} failed: {_last_lines(text)}")
    shown = _run(worktree, "rev-parse", "--verify", "--quiet", ref)
    return shown.stdout.strip() or None


def push(worktree: Path, remote: str, branch: str, commit: str) -> Pushed:
    """Push ``commit`` to ``branch`` of ``remote`` as a fast-forward (never forced)."""
    done = _run(worktree, "push", "--porcelain", "--quiet", remote, f"{commit}:refs/heads/{branch}")
    if done.returncode == 0:
        return Pushed(True)
    text = (done.stdout + "\n" + done.stderr).strip()
    rejected = any(w in text for w in ("[rejected]", "non-fast-forward", "fetch first"))
    rejected = rejected or "cannot lock ref" in text  # another host pushing this instant
    return Pushed(False, rejected, _last_lines(text))


def remote_configured(worktree: Path, remote: str) -> bool:
    """Whether ``remote`` is something to sync with: a URL or path, or the name of a remote
    the repository has."""
    if "/" in remote or ":" in remote:
        return True
    done = _run(worktree, "config", "--get", f"remote.{remote}.url")
    return done.returncode == 0 and bool(done.stdout.strip())


def _last_lines(text: str, n: int = 3) -> str:
    return " / ".join(line.strip() for line in text.splitlines()[-n:] if line.strip())


__all__ = [
    "FETCHED_REF",
    "GIT_TIMEOUT_S",
    "Pushed",
    "fetch",
    "git_program",
    "push",
    "remote_configured",
]
