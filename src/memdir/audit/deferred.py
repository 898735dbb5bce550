"""Writes held back while git could not take memdir's commit, kept until they are committed
(issues 27 and 35).

On a detached HEAD, in the middle of a rebase, or beside a git file that cannot be read safely
(:mod:`memdir.audit.gitstate`), memdir writes the files and records the write in
``.memdir/audit.jsonl``, but the new lines are then uncommitted changes that a person's next
ordinary command takes away: ``git rebase --abort`` resets the files it touched, and ``git
checkout -- memory/`` or ``git stash`` + ``git stash drop`` after the branch is back do too. So
each such write is kept here, in ``.memdir/audit/deferred/<record id>.json`` (what each file
was before memdir wrote, and after), until it is committed.

At the next automatic write (or ``memdir log``) made once git is safe again,
:func:`commit_held_back` (called by :func:`memdir.audit.seam.recover`, under the workspace
lock, before the new write) takes the kept writes oldest first: lines git removed meanwhile are
put back (memdir's change carried onto the file as it is now,
:func:`memdir.audit.merge.carry_change`), and the write's lines are committed, carried onto
HEAD as every audit commit is, as a ``write`` commit of their own. Only then does the entry go;
a commit that fails keeps it (and the ones after it) for the next write. A file git ignores
needs no commit. ``memdir status`` counts the entries waiting.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from memdir.audit.gitstate import unsafe_reason
from memdir.audit.merge import carry_change, changed_lines, line_key
from memdir.audit.records import AuditRecord, FileChange
from memdir.audit.rewrite import read_text, rewrite
from memdir.audit.where import git_trail, git_worktree, repo_prefix
from memdir.clock import now
from memdir.errors import MemdirError
from memdir.markdown.sections import split_lines
from memdir.workspace.fileio import atomic_write, read_regular_file
from memdir.workspace.layout import Workspace

if TYPE_CHECKING:
    from memdir.audit.git import GitTrail

log = logging.getLogger("memdir.audit")

FOLDER = "audit/deferred"


@dataclass(frozen=True)
class Deferred:
    """One write made while git was unsafe: its record id, why, and the files' texts."""

    record_id: str
    reason: str
    files: dict[str, tuple[str | None, str]]

    def to_dict(self) -> dict[str, object]:
        return {
            "record_id": self.record_id,
            "reason": self.reason,
            "files": {rel: [before, after] for rel, (before, after) in self.files.items()},
        }


def folder(state_dir: Path) -> Path:
    return state_dir / FOLDER


def save(
    state_dir: Path, record_id: str, reason: str, files: dict[str, tuple[str | None, str]]
) -> None:
    """Keep a write made while git was unsafe (atomic: a whole entry or none)."""
    entry = Deferred(record_id, reason, dict(files))
    target = folder(state_dir) / f"{record_id}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, json.dumps(entry.to_dict(), ensure_ascii=False))


def pending(state_dir: Path) -> list[Deferred]:
    """The kept writes, oldest first; an unreadable entry is skipped (and left for a person)."""
    try:
        names = sorted(
            (e for e in os.scandir(folder(state_dir)) if e.name.endswith(".json")),
            key=lambda e: e.stat(follow_symlinks=False).st_mtime,
        )
    except OSError:
        return []
    out = []
    for entry in names:
        try:
            data = json.loads(read_regular_file(entry.path, limit=4 << 20))
            files = {rel: (pair[0], str(pair[1])) for rel, pair in data["files"].items()}
            out.append(Deferred(str(data["record_id"]), str(data["reason"]), files))
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            continue
    return out


def count(state_dir: Path) -> int:
    try:
        return sum(1 for name in os.listdir(folder(state_dir)) if name.endswith(".json"))
    except OSError:
        return 0


def drop(state_dir: Path, record_id: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(folder(state_dir) / f"{record_id}.json")


def commit_held_back(workspace: Workspace) -> tuple[list[AuditRecord], list[str]]:
    """Commit the writes held back while git was unsafe, once it is safe (see the module
    docstring; call under the workspace lock).

    Returns:
        The commits' records, and warnings (a commit that failed, kept for the next write).
    """
    kept = pending(workspace.state_dir)
    if not kept:
        return [], []
    worktree = git_worktree(workspace)
    if worktree is None:  # no repository any more, or [audit] git = "off": the log has them
        for entry in kept:
            drop(workspace.state_dir, entry.record_id)
        return [], []
    rels = sorted({rel for entry in kept for rel in entry.files})
    if unsafe_reason(worktree, rels, repo_prefix(workspace, worktree)):
        return [], []  # still unsafe: they wait (``memdir status`` says how many)
    git = git_trail(workspace)
    if git is None:
        return [], []
    stored: list[AuditRecord] = []
    warnings: list[str] = []
    try:
        for entry in kept:
            record = _commit_entry(workspace, git, entry)
            if isinstance(record, str):
                warnings.append(record)
                log.warning("%s", record)
                break  # keep the order: later entries wait for this one
            if record is not None:
                stored.append(record)
            drop(workspace.state_dir, entry.record_id)
        warnings.extend(git.notes)
    finally:
        git.close()
    return stored, warnings


def _commit_entry(workspace: Workspace, git: GitTrail, entry: Deferred) -> AuditRecord | str | None:
    """Put back what git removed of one held-back write and commit it; the record, None when
    there was nothing to commit, or a warning when the commit failed."""
    record_id = hashlib.sha256(f"held back {entry.record_id}".encode()).hexdigest()[:16]
    if git.find(record_id) is not None:
        return None  # committed before a kill, the entry not yet dropped
    files = {rel: pair for rel, pair in entry.files.items() if not git.ignored(rel)}
    put_back = 0
    for rel, (before, after) in list(files.items()):
        try:
            current = read_text(workspace, rel) or ""
            missing = _missing_part(before or "", after, current)
            if missing is not None:
                rewrite(workspace, rel, current, carry_change(before or "", missing, current))
                put_back += len(changed_lines(before or "", missing)[1])
        except (MemdirError, OSError) as exc:
            return f"held-back write {entry.record_id} to {rel} kept: {exc}"
    if not files:
        return None
    changes = tuple(
        FileChange(rel, *(tuple(x) for x in changed_lines(b or "", a)))
        for rel, (b, a) in sorted(files.items())
    )
    added = sum(len(c.added) for c in changes)
    what = f"{added} line{'s' if added != 1 else ''}"
    if put_back == added:
        summary = f"put back {what} written while {entry.reason}, which git removed since"
    else:
        summary = f"commit {what} held back while {entry.reason}"
        if put_back:
            summary += f" ({put_back} put back: git had removed them)"
    record = AuditRecord(
        id=record_id,
        time=now().astimezone(),
        component="write",
        summary=summary,
        files=changes,
    )
    try:
        sha = git.commit(record, files)
    except MemdirError as exc:
        return f"held-back write {entry.record_id} not committed yet (tried again next): {exc}"
    return replace(record, commit=sha) if sha is not None else None


def _missing_part(before: str, after: str, current: str) -> str | None:
    """``after`` with only the added lines that ``current`` lacks (None when it lacks none):
    the change that puts back what git removed without doubling what it left."""
    _, added = changed_lines(before, after)
    present: dict[str, int] = {}
    for line in split_lines(current):
        present[line_key(line)] = present.get(line_key(line), 0) + 1
    missing_at = set()
    for number, text in added:
        if present.get(text, 0) > 0:
            present[text] -= 1
        else:
            missing_at.add(number)
    if not missing_at:
        return None
    added_at = {number for number, _ in added}
    lines = split_lines(after)
    return "".join(x for n, x in enumerate(lines, 1) if n not in added_at or n in missing_at)


__all__ = ["Deferred", "commit_held_back", "count", "drop", "folder", "pending", "save"]
