"""Reading the audit trail: :func:`read_trail` (``memdir log``), :func:`init_git`
(``memdir init --git``) and :func:`trail_status`. (What a person browses as the workspace's
history, the trail's records with the files' own, is :mod:`memdir.history`.)

In a git workspace the trail is memdir's commits reachable from HEAD (a commit carries the
``Memdir-Id:`` trailer) plus any record kept in ``.memdir/audit.jsonl`` (paths git ignores, or a
commit that failed); without git, the log file alone. A ``git revert`` of a memdir commit is the
person's commit, not memdir's: it is not listed, but :mod:`memdir.audit.provenance` sees its
effect (the lines are gone).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from memdir.audit import deferred
from memdir.audit.gitstate import unsafe_reason
from memdir.audit.lock import workspace_lock
from memdir.audit.records import AuditRecord
from memdir.audit.rewrite import read_text
from memdir.audit.seam import audited, check_writable, pending_count, recover
from memdir.audit.where import git_trail, git_worktree, log_trail
from memdir.errors import ReadOnly, WorkspaceError
from memdir.workspace.layout import Workspace


def read_trail(
    workspace: Workspace,
    *,
    path: str | None = None,
    limit: int | None = None,
    with_lines: bool = True,
) -> list[AuditRecord]:
    """The automatic writes, newest first.

    Args:
        workspace: the workspace.
        path: only the records that changed this workspace-relative file (or folder).
        limit: at most this many records.
        with_lines: include the changed lines (reading each commit's diff costs more).

    An operation a killed process left unrecorded is recorded first (under the write lock),
    unless the workspace is read-only: then the trail is read as it is.
    """
    if pending_count(workspace):
        with contextlib.suppress(ReadOnly):
            check_writable(workspace)
            with workspace_lock(workspace.state_dir):
                recover(workspace)
    wanted = path.strip("/") if path else None
    records: list[AuditRecord] = []
    git = git_trail(workspace)
    if git is not None:
        try:
            for record in git.records(with_lines=with_lines):
                if _touches(record, wanted):
                    records.append(record)
                    if limit is not None and len(records) >= limit:
                        break
        finally:
            git.close()
    logged = [r for r in log_trail(workspace).records() if _touches(r, wanted)]
    records.extend(reversed(logged))
    records.sort(key=lambda r: r.time, reverse=True)  # stable: same-second records stay in order
    return records[:limit] if limit is not None else records


def _touches(record: AuditRecord, path: str | None) -> bool:
    if path is None:
        return True
    return any(p == path or p.startswith(path + "/") for p in record.paths)


def trail_status(workspace: Workspace) -> dict[str, object]:
    """Where records go (``git`` with the repository, or ``log`` with the file) and how many
    operations wait in the journal; for git, why commits are paused (``paused``, see
    :mod:`memdir.audit.gitstate`) and how many writes made meanwhile are kept to be put back
    (``deferred``). Found from the git folder's files (:func:`git_worktree`), so ``memdir
    status`` does not load dulwich."""
    worktree = git_worktree(workspace)
    if worktree is not None:
        rel = workspace.root.relative_to(worktree).as_posix()
        prefix = "" if rel == "." else rel + "/"
        where: dict[str, object] = {
            "kind": "git",
            "repository": str(worktree),
            "prefix": prefix,
            # Why commits wait (a detached HEAD, a rebase…): writes go to the log meanwhile.
            "paused": unsafe_reason(worktree, (), prefix),
        }
    else:
        where = {"kind": "log", "file": str(log_trail(workspace).path)}
    where["pending"] = pending_count(workspace)
    where["deferred"] = deferred.count(workspace.state_dir)
    return where


def init_git(workspace: Workspace, created: list[str]) -> tuple[str, str | None]:
    """Make the workspace a git repository unless it is in one, and commit the files
    ``memdir init`` just created (``init: workspace templates``).

    Returns:
        The repository folder and the commit id (None when there was nothing to commit).

    Raises:
        WorkspaceError: ``[audit] git = "off"``, or the repository cannot be created.
    """
    if workspace.audit_git == "off":
        raise WorkspaceError('--git needs [audit] git = "auto" (it is "off" in the config)')
    from dulwich.repo import Repo

    from memdir.audit.git import GitTrail

    git = GitTrail.discover(workspace.root)
    if git is None:
        try:
            Repo.init(str(workspace.root)).close()
        except OSError as exc:
            raise WorkspaceError(f"cannot create a git repository: {exc}") from exc
        git = GitTrail.discover(workspace.root)
        if git is None:
            raise WorkspaceError(f"{workspace.root}: the new git repository cannot be opened")
    try:
        head = git.head()
        # A file git already has is committed as it is now (init only added to it).
        before = {rel: git.blob_at(head, Path(rel).as_posix()) if head else None for rel in created}
        worktree = str(git.worktree)
    finally:
        git.close()
    with audited(workspace, "init", summary="workspace templates") as op:
        for rel in created:
            text = read_text(workspace, Path(rel).as_posix())
            if text is not None:
                op.adopt(Path(rel).as_posix(), before[rel], text)
    return worktree, op.record.commit if op.record else None
