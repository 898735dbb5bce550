"""The one seam every automatic write goes through: :func:`audited`, :func:`write_text`,
:func:`append_text`.

An automatic writer (flush, capture, extraction, ``memory_write``, session archives, dreaming,
forget, the hooks) opens an operation and changes files only through this module::

    with audited(workspace, "flush", session=session_id) as op:
        ...                       # memory_write calls append_text(...) for each line
        op.describe(f"{n} facts from session {session_id[:8]}…")

The operation holds the workspace write lock from its first write to its record, so writes and
records of two processes never interleave. Each file write is announced in the journal first
(:mod:`memdir.audit.journal`), then made (atomic replace or locked append), and when the
operation ends its record is stored once: a commit when the workspace is in a git repository
(:mod:`memdir.audit.git`), else a line of ``.memdir/audit.jsonl``. Operations nest: a writer
called inside another's operation joins it, so one flush of three lines is one record.

Checks that must run before a write (issue 14's secret check) belong before the call into this
module; the record is made after the write, here. One check is made here, before anything is
written (the journal included): :func:`check_writable`, so a read-only workspace, or a file a
person made read-only, is one clear error and not a half-made operation.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from memdir.audit import deferred, journal
from memdir.audit.gitlocks import clear_stale_locks
from memdir.audit.gitstate import unsafe_reason
from memdir.audit.journal import Intent
from memdir.audit.lock import workspace_lock
from memdir.audit.merge import carry_change, changed_lines
from memdir.audit.records import AuditRecord, FileChange
from memdir.audit.rewrite import read_text, rewrite
from memdir.audit.where import git_trail, git_worktree, log_trail, repo_prefix
from memdir.clock import now
from memdir.errors import MemdirError, ReadOnly
from memdir.workspace.fileio import folder_read_only, refuse_read_only
from memdir.workspace.layout import MEMORY_DIR, Workspace

log = logging.getLogger("memdir.audit")

#: ``[audit] git`` values: ``auto`` commits when the workspace is in a git repository.
GIT_MODES = ("auto", "off")

_local = threading.local()


def _active() -> dict[str, Operation]:
    ops: dict[str, Operation] | None = getattr(_local, "ops", None)
    if ops is None:
        ops = _local.ops = {}
    return ops


@dataclass
class Operation:
    """One audited write in progress: what it changed so far and how it will be described."""

    workspace: Workspace
    intent: Intent
    record: AuditRecord | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def component(self) -> str:
        return self.intent.component

    def describe(self, summary: str) -> None:
        """Set the record's one-line reason (default: the lines and files changed)."""
        self.intent.summary = summary

    def adopt(self, rel: str, before: str | None, text: str) -> None:
        """Record a file memdir changed from ``before`` to ``text`` before the operation began
        (``memdir init --git`` commits the templates it wrote this way)."""
        self.intent.files[rel] = (before, text)


@contextlib.contextmanager
def audited(
    workspace: Workspace,
    component: str,
    *,
    summary: str | None = None,
    session: str | None = None,
    via: str | None = None,
) -> Iterator[Operation]:
    """Open an audited operation (or join the one this thread has open on ``workspace``).

    Args:
        workspace: where the files are.
        component: who writes: ``flush``, ``capture``, ``extract``, ``archive``, ``dream``,
            ``write``, ``forget``, ``hook``, ``init``.
        summary: why, in one line; may be set later with :meth:`Operation.describe`.
        session: the chat session the write comes from.
        via: the tool or command that asked (``MCP memory_write``, ``memdir remember``).
    """
    ops = _active()
    key = str(workspace.state_dir)
    outer = ops.get(key)
    if outer is not None:
        intent = outer.intent
        intent.session = intent.session or session
        intent.via = intent.via or via
        yield outer
        return
    check_writable(workspace)
    with workspace_lock(workspace.state_dir):
        recover(workspace)
        intent = Intent(uuid.uuid4().hex[:16], component, now().astimezone(), summary, session, via)
        op = Operation(workspace, intent)
        ops[key] = op
        try:
            yield op
        finally:
            del ops[key]
            if intent.files:
                _finish(workspace, op)


def write_text(workspace: Workspace, rel: str, text: str, *, based_on: str | None = None) -> str:
    """Replace the workspace file ``rel`` with ``text`` atomically, as part of the current
    operation (a ``write`` operation of its own when none is open).

    ``text`` is the writer's edit of ``based_on``, the text it read (default: the file as it
    is when this is called). When someone changed the file since — a person's ``echo >>``, an
    editor — memdir's change is carried onto their text instead (:func:`rewrite`), and what
    they wrote is never counted as memdir's in the record.

    Returns:
        The text the file holds once written.
    """
    with audited(workspace, "write") as op:
        check_writable(workspace, rel)
        before = _before(op, workspace, rel)
        base = read_text(workspace, rel) if based_on is None else based_on
        _announce(op, rel, before, text)
        final = rewrite(workspace, rel, base, text)
        _note_change(op, rel, base, text, final)
        return final


def append_text(workspace: Workspace, rel: str, text: str) -> int:
    """Append ``text`` to the workspace file ``rel`` under its lock
    (:meth:`memdir.workspace.layout.Workspace.append_file`), as part of the current operation;
    return the 1-based line where it starts."""
    with audited(workspace, "write") as op:
        check_writable(workspace, rel)
        before = _before(op, workspace, rel)
        current = read_text(workspace, rel)
        joint = "\n" if current and not current.endswith("\n") else ""
        mine = (current or "") + joint + text
        _announce(op, rel, before, mine)
        start = workspace.append_file(rel, text)
        _note_change(op, rel, current, mine, read_text(workspace, rel) or "")
        return start


def _note_change(
    op: Operation, rel: str, mine_before: str | None, mine_after: str, final: str
) -> None:
    """Keep in the operation what ``rel`` held before it and holds now, so that the record
    shows memdir's change only: what others wrote meanwhile (the file minus memdir's change)
    is folded into the "before" side too, and is never counted as memdir's."""
    theirs = carry_change(mine_after, mine_before or "", final)
    if rel in op.intent.files:
        first, last = op.intent.files[rel]
        if theirs != last:  # changed by someone else between two of this operation's writes
            first = carry_change(last, theirs, first or "")
    else:
        first = None if mine_before is None and not theirs else theirs
    op.intent.files[rel] = (first, final)


def check_writable(workspace: Workspace, *rels: str) -> None:
    """Refuse, before anything is written, a write the workspace cannot take: the workspace
    folder, ``.memdir/`` (the lock, the journal, the audit trail), its locks or ``memory/`` is
    read-only (a read-only mount, or a folder made read-only), or one of the files ``rels``
    (workspace-relative) was made read-only by a person. A writer of several files names them
    all first, so it changes all of them or none.

    Raises:
        ReadOnly: naming what is read-only and what to do.
    """
    root = workspace.root
    for folder in (root, workspace.state_dir, workspace.lock_dir, root / MEMORY_DIR):
        why = folder_read_only(folder)
        if why is None:
            continue
        if why.endswith("file system"):
            fix = "remount it read-write"
        else:
            fix = f"make it writable (chmod u+w {folder})"
        raise ReadOnly(
            f"workspace {root} is read-only: {folder} is {why}; memdir cannot save memory there "
            f"and wrote nothing. To write: {fix}, or point --workspace (or MEMDIR_WORKSPACE) "
            "at a writable copy; search and get still work"
        )
    for rel in rels:
        refuse_read_only(root / rel)


def recover(workspace: Workspace) -> list[AuditRecord]:
    """Finish the operations a killed process left in the journal (call under the lock).

    Returns:
        The records stored now.
    """
    clear_stale_locks(workspace.state_dir)
    journal.clear_temporary(workspace.state_dir)
    stored, warnings = deferred.commit_held_back(workspace)
    for warning in warnings:
        log.warning("%s", warning)
    for intent in journal.pending(workspace.state_dir):
        files: dict[str, tuple[str | None, str]] = {}
        for rel, (before, _) in intent.files.items():
            try:
                current = read_text(workspace, rel)
            except MemdirError:  # became a symlink or a special file: not ours to record
                continue
            if current is not None and current != before:
                files[rel] = (before, current)
        if files and not _already_stored(workspace, intent.id, files):
            op = Operation(workspace, replace(intent, files=files))
            _finish(workspace, op)
            if op.record is not None:
                stored.append(op.record)
        journal.clear(workspace.state_dir, intent.id)
    return stored


def _before(op: Operation, workspace: Workspace, rel: str) -> str | None:
    if rel in op.intent.files:
        return op.intent.files[rel][0]
    return read_text(workspace, rel)


def _announce(op: Operation, rel: str, before: str | None, after: str) -> None:
    files = dict(op.intent.files)
    files[rel] = (before, after)
    journal.save(op.workspace.state_dir, replace(op.intent, files=files))


def _already_stored(
    workspace: Workspace, record_id: str, files: dict[str, tuple[str | None, str]]
) -> bool:
    """Whether the record is in the trail; a commit whose writer died before updating the
    person's index gets its index update now."""
    git = git_trail(workspace)
    if git is not None:
        try:
            commit = git.find(record_id)
            if commit is not None:
                git.finish_index(commit, files)
                return True
        finally:
            git.close()
    return log_trail(workspace).has(record_id)


def _finish(workspace: Workspace, op: Operation) -> None:
    """Store the operation's record; on failure keep the journal so the next write retries."""
    intent = op.intent
    files = {rel: (b, a) for rel, (b, a) in intent.files.items() if b != a}
    if not files:
        journal.clear(workspace.state_dir, intent.id)
        return
    changes = tuple(_file_change(rel, b, a) for rel, (b, a) in sorted(files.items()))
    record = AuditRecord(
        id=intent.id,
        time=intent.time,
        component=intent.component,
        summary=intent.summary or default_summary(changes),
        files=changes,
        session=intent.session,
        via=intent.via,
    )
    try:
        op.record = _store(workspace, record, files, op.warnings)
        for warning in op.warnings:
            log.warning("%s", warning)
    except (MemdirError, OSError) as exc:
        message = (
            f"audit record of {record.message!r} not stored yet (retried on the next write): {exc}"
        )
        op.warnings.append(message)
        log.warning(message)
        return
    journal.clear(workspace.state_dir, intent.id)


def _store(
    workspace: Workspace,
    record: AuditRecord,
    files: dict[str, tuple[str | None, str]],
    warnings: list[str],
) -> AuditRecord:
    worktree = git_worktree(workspace)
    if worktree is not None:
        reason = unsafe_reason(worktree, files, repo_prefix(workspace, worktree))
        if reason is not None:
            paused = f"not committed: {reason}"
            logged = log_trail(workspace).append(replace(record, note=paused))
            deferred.save(workspace.state_dir, record.id, reason, files)
            warnings.append(
                f"{paused}; recorded in .memdir/audit.jsonl instead and held back, to be "
                "committed with the next write once git is safe"
            )
            return logged
    git = git_trail(workspace)
    if git is None:
        return log_trail(workspace).append(record)
    try:
        committable = {rel: v for rel, v in files.items() if not git.ignored(rel)}
        note = "ignored by git" if len(committable) < len(files) else None
        stored = record
        if committable:
            try:
                part = _subset(record, committable)
                sha = git.commit(part, committable)
                if sha is None:  # it touched only uncommitted lines: keep the record anyway
                    committable, note = {}, "no commit: only uncommitted lines changed"
                stored = replace(part, commit=sha)
            except MemdirError as exc:
                committable, note = {}, f"git commit failed: {exc}"
                warnings.append(note)
        leftover = {rel: v for rel, v in files.items() if rel not in committable}
        if leftover:
            log_trail(workspace).append(replace(_subset(record, leftover), note=note))
            if not committable:
                return replace(record, note=note)
        warnings.extend(git.notes)
        return stored
    finally:
        git.close()


def _subset(record: AuditRecord, files: dict[str, tuple[str | None, str]]) -> AuditRecord:
    return replace(record, files=tuple(c for c in record.files if c.path in files))


def _file_change(rel: str, before: str | None, after: str) -> FileChange:
    removed, added = changed_lines(before or "", after)
    return FileChange(rel, tuple(removed), tuple(added))


def default_summary(changes: tuple[FileChange, ...]) -> str:
    """``2 lines to memory/2026-12-01.md`` / ``removed 1 line from MEMORY.md``."""
    added = sum(len(c.added) for c in changes)
    removed = sum(len(c.removed) for c in changes)
    where = ", ".join(c.path for c in changes[:3]) + (" …" if len(changes) > 3 else "")
    parts = []
    if added:
        parts.append(f"{added} line{'s' if added != 1 else ''}")
    if removed:
        parts.append(f"removed {removed}")
    return f"{' and '.join(parts) or 'no line'} in {where}"


def plural(n: int, one: str, many: str | None = None) -> str:
    """``1 fact`` / ``3 facts``."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def from_session(session: str | None) -> str:
    """`` from session 7f3c9a2b…`` (empty without a session)."""
    return f" from session {session[:8]}…" if session else ""


def pending_count(workspace: Workspace) -> int:
    """How many operations wait in the journal (a process was killed mid-write)."""
    folder = journal.pending_dir(workspace.state_dir)
    try:
        return sum(1 for name in os.listdir(folder) if name.endswith(".json"))
    except OSError:
        return 0
