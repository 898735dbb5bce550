"""Writes held back while git was unsafe are committed once it is safe, never dropped (issue
35, defect 2).

On 9657cf2 a fact written on a detached HEAD (or beside a FIFO ``.gitignore``) was recorded in
``.memdir/audit.jsonl`` and kept "to be put back"; the next write on the branch committed only
its own line and dropped the kept one, since its lines were still in the file. They were then
uncommitted changes, and ``git checkout -- ws/`` or ``git stash`` + ``git stash drop`` deleted
them. Checked with the real git binary on real repositories.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

from click.testing import CliRunner

from memdir.audit import deferred
from memdir.audit.trail import trail_status
from memdir.cli.main import cli
from memdir.lifecycle.write import write_memory
from memdir.workspace.layout import Workspace
from tests.audit.conftest import GitRunner

NOW = datetime(2026, 12, 1, 9, 30)
DAILY = "ws/memory/2026-12-01.md"


def remember(repo: Path, text: str, **where: str) -> None:
    write_memory(Workspace(repo / "ws"), text, now=NOW, **where)  # type: ignore[arg-type]


def memory_files(repo: Path) -> str:
    return (repo / "ws" / "MEMORY.md").read_text() + (repo / DAILY).read_text()


def subjects(repo: Path, git: GitRunner) -> list[str]:
    return git(repo, "log", "--format=%s").splitlines()


def test_facts_held_back_on_a_detached_head_are_committed_on_the_branch(
    repo: Path, git: GitRunner
) -> None:
    git(repo, "checkout", "-q", "--detach")
    remember(repo, "detached fact one")
    remember(repo, "detached fact two", target="memory", section="facts")
    ws = Workspace(repo / "ws")
    assert trail_status(ws)["deferred"] == 2
    status = CliRunner().invoke(cli, ["-w", str(repo / "ws"), "status"], catch_exceptions=False)
    assert "2 write(s) held back" in status.output
    git(repo, "checkout", "-q", "main")  # the changes come along, uncommitted
    remember(repo, "a fact on the branch")
    why = "held back while HEAD is detached (no branch is checked out)"
    assert subjects(repo, git)[:3] == [  # oldest first, before the new write
        "write: 1 line in memory/2026-12-01.md",
        f"write: commit 1 line {why}",  # the MEMORY.md fact
        f"write: commit 3 lines {why}",  # the new daily log: heading, blank line, fact
    ]
    assert trail_status(ws)["deferred"] == 0
    git(repo, "checkout", "--", "ws/")  # a person throws their uncommitted changes away
    text = memory_files(repo)
    for fact in ("detached fact one", "detached fact two", "a fact on the branch"):
        assert fact in text
    assert git(repo, "status", "--porcelain") == ""


def test_a_fact_held_back_by_a_fifo_gitignore_survives_stash_and_drop(
    repo: Path, git: GitRunner
) -> None:
    fifo = repo / "ws" / "memory" / ".gitignore"
    os.mkfifo(fifo)
    remember(repo, "written beside a FIFO")
    assert trail_status(Workspace(repo / "ws"))["deferred"] == 1
    fifo.unlink()
    remember(repo, "written once git is safe")
    (repo / "notes.txt").write_text("the person's file\nwork in progress\n")
    git(repo, "stash")  # the person puts their work aside, then throws it away
    git(repo, "stash", "drop")
    text = memory_files(repo)
    assert "written beside a FIFO" in text and "written once git is safe" in text
    shown = git(repo, "show", f"HEAD~1:{DAILY}")
    assert "written beside a FIFO" in shown and "written once git is safe" not in shown


def test_lines_git_removed_are_put_back_and_committed(repo: Path, git: GitRunner) -> None:
    git(repo, "checkout", "-q", "--detach")
    remember(repo, "held back, then thrown away", target="memory", section="facts")
    git(repo, "checkout", "-q", "-f", "main")  # -f: git drops the uncommitted line
    assert "held back" not in (repo / "ws" / "MEMORY.md").read_text()
    remember(repo, "the next fact")
    assert "held back, then thrown away" in memory_files(repo)
    assert subjects(repo, git)[1] == (
        "write: put back 1 line written while HEAD is detached (no branch is checked out), "
        "which git removed since"
    )
    assert "held back, then thrown away" in git(repo, "show", "HEAD:ws/MEMORY.md")


def test_a_held_back_write_whose_commit_fails_waits_for_the_next(
    repo: Path, git: GitRunner
) -> None:
    git(repo, "checkout", "-q", "--detach")
    remember(repo, "held back fact")
    git(repo, "checkout", "-q", "main")
    lock = repo / ".git" / "refs" / "heads" / "main.lock"
    lock.write_text("a person's git holds the branch\n")  # every commit fails meanwhile
    remember(repo, "written while the branch is locked")
    assert trail_status(Workspace(repo / "ws"))["deferred"] == 1  # kept, not dropped
    lock.unlink()
    remember(repo, "written once the lock is gone")
    assert trail_status(Workspace(repo / "ws"))["deferred"] == 0
    assert "held back fact" in git(repo, "show", f"HEAD:{DAILY}")
    git(repo, "checkout", "--", "ws/")
    assert "held back fact" in memory_files(repo)


def test_a_held_back_write_is_committed_once_even_after_a_kill(repo: Path, git: GitRunner) -> None:
    """A kill between the commit and the removal of the kept entry leaves the entry: the next
    write finds the commit (its record id) and does not commit the lines twice."""
    git(repo, "checkout", "-q", "--detach")
    remember(repo, "held back once")
    git(repo, "checkout", "-q", "main")
    state = repo / "ws" / ".memdir"
    [entry] = list(deferred.folder(state).iterdir())
    saved = entry.read_bytes()
    remember(repo, "second fact")
    entry.write_bytes(saved)  # as if killed before the entry was removed
    remember(repo, "third fact")
    assert git(repo, "show", f"HEAD:{DAILY}").count("held back once") == 1
    held = [s for s in subjects(repo, git) if "held back" in s]
    assert len(held) == 1 and not list(deferred.folder(state).iterdir())
    assert json.loads(saved)["reason"].startswith("HEAD is detached")
