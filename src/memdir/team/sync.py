"""``memdir team sync``: one team memory kept in step through a git remote
(docs/design.md#team-memory).

1. Fetch the remote's branch (the ``git`` program, :mod:`memdir.team.transport`), outside any
   lock: a slow network holds up no writer.
2. Under the workspace write lock (no automatic write interleaves): finish what a killed write
   or a killed sync left (:func:`memdir.audit.recover`,
   :func:`memdir.team.apply.finish_interrupted`); then, when the remote has commits this host
   lacks, fast-forward to them or merge them in objects (:mod:`memdir.team.trees`) and move
   the branch, the files and the person's index (:mod:`memdir.team.apply`).
3. Check what would leave this host for secrets (every line the remote does not have yet):
   one found, nothing is pushed, and the report says where.
4. Push as a fast-forward. When another host pushed first, fetch and merge again (at most
   :data:`ATTEMPTS` times).

The workspace must be its own repository (``memdir init --git``, or a clone of the team's
remote): a sync never pushes a project's code that happens to hold a memory folder.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

from memdir.audit import recover
from memdir.audit.git import GitTrail
from memdir.audit.gitstate import git_dir, unsafe_reason
from memdir.audit.lock import workspace_lock
from memdir.audit.merge import changed_lines
from memdir.audit.where import git_worktree
from memdir.errors import WorkspaceError
from memdir.safety.privacy import SecretGuard
from memdir.team import disagreements
from memdir.team.apply import apply_plan, finish_interrupted, plan_move
from memdir.team.merge import Contradiction
from memdir.team.transport import fetch, push
from memdir.team.trees import (
    blob_text,
    changed_paths,
    commit_of,
    is_ancestor,
    make_merge_commit,
    merge_base,
    merge_commits,
)
from memdir.workspace.fileio import atomic_write
from memdir.workspace.layout import Workspace

#: How often a sync fetches and merges again when another host pushed first.
ATTEMPTS = 6


@dataclass
class TeamReport:
    """What one sync did."""

    remote: str
    branch: str
    before: str | None = None
    after: str | None = None
    fetched: str | None = None
    fast_forward: bool = False
    merged: bool = False
    pushed: bool = False
    #: Workspace files the sync changed on this host.
    files: list[str] = field(default_factory=list)
    #: Lines both hosts changed differently, kept both and listed by ``memdir review``.
    disagreements: int = 0
    #: Why nothing was pushed although there was something to push (a secret found).
    refused: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "remote": self.remote,
            "branch": self.branch,
            "before": self.before,
            "after": self.after,
            "fetched": self.fetched,
            "fast_forward": self.fast_forward,
            "merged": self.merged,
            "pushed": self.pushed,
            "files": self.files,
            "disagreements": self.disagreements,
            "refused": self.refused,
            "notes": self.notes,
        }


def checked_out_branch(workspace: Workspace) -> str:
    """The branch the workspace's repository has checked out.

    Raises:
        WorkspaceError: the workspace is not its own git repository, or no branch is out.
    """
    worktree = git_worktree(workspace)
    if worktree is None:
        raise WorkspaceError(
            f"{workspace.root} is not in a git repository: make it one (`memdir init --git`, "
            "then `git remote add origin URL`) or clone the team's (`git clone URL FOLDER`)"
        )
    if worktree.resolve() != workspace.root.resolve():
        raise WorkspaceError(
            f"{workspace.root} is inside the repository {worktree}: memdir team syncs a "
            "workspace that is its own repository, so it never pushes anything else; keep the "
            "team's memory in a folder of its own (`git clone URL FOLDER`)"
        )
    gitdir = git_dir(worktree)
    head = (gitdir / "HEAD").read_text(encoding="utf-8").strip() if gitdir else ""
    if not head.startswith("ref: refs/heads/"):
        raise WorkspaceError(f"{worktree}: no branch is checked out (HEAD is detached)")
    return head.removeprefix("ref: refs/heads/")


def sync_workspace(
    workspace: Workspace,
    *,
    remote: str,
    branch: str = "",
    guard: SecretGuard | None = None,
) -> TeamReport:
    """Fetch, merge and push the workspace's repository (see the module docstring).

    Raises:
        WorkspaceError: not a repository of its own, git unsafe now (a rebase in progress…),
            the remote unreachable, or it kept moving.
    """
    branch = branch or checked_out_branch(workspace)
    report = TeamReport(remote, branch)
    try:
        _sync(workspace, report, guard)
    except WorkspaceError as exc:
        _remember(workspace, f"failed: {exc}")
        raise
    _remember(workspace, report.refused or ("pushed" if report.pushed else "up to date"))
    return report


def _sync(workspace: Workspace, report: TeamReport, guard: SecretGuard | None) -> None:
    remote, branch = report.remote, report.branch
    for _ in range(ATTEMPTS):
        theirs = fetch(workspace.root, remote, branch)
        report.fetched = theirs
        with workspace_lock(workspace.state_dir):
            outgoing = _merge_locally(workspace, theirs, report, guard)
        if outgoing is None:
            return
        pushed = push(workspace.root, remote, branch, outgoing)
        if pushed.ok:
            report.pushed = True
            return
        if not pushed.rejected:
            raise WorkspaceError(f"git push to {remote} failed: {pushed.message}")
    raise WorkspaceError(
        f"{remote} kept moving while this host merged ({ATTEMPTS} tries): run it again"
    )


def _merge_locally(
    workspace: Workspace, theirs: str | None, report: TeamReport, guard: SecretGuard | None
) -> str | None:
    """Step 2 and 3 under the write lock; returns the commit to push, or None."""
    recover(workspace)  # killed automatic writes committed, held-back ones too
    reason = unsafe_reason(workspace.root)
    if reason is not None:
        raise WorkspaceError(f"cannot sync {workspace.root} now: {reason}")
    trail = GitTrail.discover(workspace.root, workspace.state_dir)
    if trail is None:
        raise WorkspaceError(f"{workspace.root}: the git repository cannot be opened")
    try:
        repo = trail.repo
        note = finish_interrupted(workspace, repo)
        if note:
            report.notes.append(note)
        ours = trail.head()
        if ours is None:
            raise WorkspaceError(
                f"{workspace.root}: the branch has no commit yet; commit once (`memdir init "
                "--git` does) or clone the team's repository"
            )
        report.before = report.before or ours
        new = ours
        if theirs is not None and not is_ancestor(repo, theirs, ours):
            kept: list[Contradiction] = []
            if is_ancestor(repo, ours, theirs):
                new, report.fast_forward = theirs, True
            else:
                new, kept = _merge_commit(repo, ours, theirs, report)
            plan = plan_move(repo, workspace, ours, new)
            if not apply_plan(workspace, trail, plan):
                raise WorkspaceError(f"{workspace.root}: HEAD moved during the sync; run it again")
            report.files = sorted(set(report.files) | set(plan.files))
            disagreements.record(workspace, kept, new)
            report.disagreements += len(kept)
        report.after = new
        if theirs == new:
            return None
        found = _secrets(repo, theirs, new, guard)
        if found:
            report.refused = (
                f"nothing pushed: {found} — edit or `memdir forget` those lines, commit, and "
                "sync again"
            )
            return None
        return new
    finally:
        trail.close()


def _merge_commit(
    repo: Any, ours: str, theirs: str, report: TeamReport
) -> tuple[str, list[Contradiction]]:
    base = merge_base(repo, ours, theirs)
    merged = merge_commits(repo, base, ours, theirs)
    offset = time.localtime().tm_gmtoff
    message = f"team: merge {report.remote} {report.branch} into this host's memory\n"
    if merged.merged_paths:
        message += "\nMerged line by line: " + ", ".join(merged.merged_paths[:20]) + "\n"
    commit = make_merge_commit(repo, merged.tree, ours, theirs, message, int(time.time()), offset)
    report.merged = True
    return commit, merged.contradictions


def _secrets(repo: Any, theirs: str | None, new: str, guard: SecretGuard | None) -> str:
    """Where the lines the remote lacks hold a secret (``path:line kind``), or empty."""
    if guard is None or guard.action == "off":
        return ""
    old_tree = commit_of(repo, theirs).tree if theirs else None
    new_tree = commit_of(repo, new).tree
    found: list[str] = []
    for path in sorted(changed_paths(repo, old_tree, new_tree)):
        after = blob_text(repo, new_tree, path)
        if after is None:
            continue
        _, added = changed_lines(blob_text(repo, old_tree, path) or "", after)
        text = "\n".join(line for _, line in added)  # whole: a key over several lines is one
        starts = list(itertools.accumulate((len(line) + 1 for _, line in added), initial=0))
        for finding in guard.find(text):
            number = added[bisect.bisect_right(starts, finding.start) - 1][0]
            found.append(f"{path}:{number} ({finding.kind})")
    if not found:
        return ""
    more = f" and {len(found) - 5} more" if len(found) > 5 else ""
    return "secrets in " + ", ".join(found[:5]) + more


LAST_FILE = "team/last.json"


def _remember(workspace: Workspace, result: str) -> None:
    """Note when the last sync ran and how it ended (``memdir team status``)."""
    when = time.strftime("%Y-%m-%d %H:%M:%S %z")
    path = workspace.state_dir / LAST_FILE
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps({"time": when, "result": result}), tmp_dir=workspace.tmp_dir)


def last_sync(workspace: Workspace) -> dict[str, str]:
    """``{time, result}`` of the last sync on this host, or empty."""
    try:
        data = json.loads((workspace.state_dir / LAST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


__all__ = ["ATTEMPTS", "TeamReport", "checked_out_branch", "last_sync", "sync_workspace"]
