"""Reading through the :class:`~memdir.memory.facade.Memory` facade: a memory file's lines under the
path policy and the privacy scope (``memory_get``), and what a person browses in ``memdir ui``
(the workspace's files, MEMORY.md's budget, the history of automatic writes).

:class:`BrowseMixin` is part of ``Memory`` (it keeps the facade's module small); its methods
need only what :class:`_Reader` names.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memdir.errors import PathNotAllowed, QueryError, WorkspaceError
from memdir.index.sync import decode_markdown
from memdir.workspace.fileio import read_regular_file
from memdir.workspace.layout import (
    MEMORY_FILE,
    OWNER_FILES,
    USER_FILE,
    Workspace,
    archive_date,
    file_kind,
    is_daily_log,
)

if TYPE_CHECKING:
    from memdir.audit import AuditRecord
    from memdir.dreaming.budget import BudgetUsage
    from memdir.dreaming.store import RecallStore
    from memdir.history import HistoryEvent
    from memdir.index.base import FileCopy
    from memdir.index.manager import IndexManager

#: Files a shared (group) session may never see (docs/design.md#scopes).
PRIVATE_FILES = frozenset({MEMORY_FILE, USER_FILE})


@dataclass(frozen=True)
class GetResult:
    """Text of a memory file, or an empty text when the file does not exist."""

    path: str
    text: str
    from_line: int
    lines: int
    total_lines: int
    exists: bool
    #: Read from another host's copy in the shared index (its host), not from this host's
    #: file (docs/design.md#memory_get); empty for a file read here.
    copy: str = ""
    #: Why the text does not come from this host's file, when it does not.
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "path": self.path,
            "text": self.text,
            "from": self.from_line,
            "lines": self.lines,
            "total_lines": self.total_lines,
            "exists": self.exists,
        }
        if self.copy:
            data["copy"] = self.copy
            data["note"] = self.note
        return data


@dataclass(frozen=True)
class MemoryFile:
    """One file of the workspace as a person browses it (:meth:`Memory.files`).

    Attributes:
        path: workspace-relative path (absolute for an extra path outside the workspace).
        kind: see :func:`memdir.workspace.layout.file_kind`; ``extra`` for configured extra paths.
        day: the date of a daily log or session archive, else None.
        size: bytes.
        mtime: modification time (seconds since the epoch).
        indexed: whether the index holds it (USER.md, AGENTS.md, DREAMS.md never are).
        warning: the index's warning for it (binary, invalid UTF-8, too large to embed).
    """

    path: str
    kind: str
    day: str | None
    size: int
    mtime: float
    indexed: bool
    warning: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "day": self.day,
            "size": self.size,
            "mtime": self.mtime,
            "indexed": self.indexed,
            "warning": self.warning,
        }


class _Reader(Protocol):
    """What :class:`BrowseMixin` needs of the facade."""

    workspace: Workspace
    scope: str
    index: IndexManager
    recalls: RecallStore

    def _memory_path(self, path: str) -> tuple[Path, str]: ...

    def read(
        self, path: str, *, from_line: int | None = None, lines: int | None = None
    ) -> GetResult: ...

    def log(self, path: str | None = None, *, limit: int | None = None) -> list[AuditRecord]: ...


class BrowseMixin:
    """``Memory``'s reading methods besides :meth:`~memdir.memory.facade.Memory.get`."""

    def _memory_path(self: _Reader, path: str) -> tuple[Path, str]:
        """Where a ``memory_get`` path points and how it is shown (the policy of
        docs/design.md#path-safety and the privacy scope)."""
        target = self.workspace.resolve_memory_path(path)
        shown = self.workspace.display_path(target)
        if self.scope == "shared" and shown in PRIVATE_FILES:
            raise PathNotAllowed(f"{path}: not available in a shared session")
        return target, shown

    def read(
        self: _Reader, path: str, *, from_line: int | None = None, lines: int | None = None
    ) -> GetResult:
        """What a person may look at (``memdir ui``): every file :meth:`get` allows, and in a
        private session also the root files USER.md, AGENTS.md and DREAMS.md (never symlinks).

        Raises:
            PathNotAllowed: as :meth:`get`, or an owner file in a shared session.
            QueryError: ``from_line`` or ``lines`` is below 1.
        """
        if (from_line is not None and from_line < 1) or (lines is not None and lines < 1):
            raise QueryError("from and lines must be 1 or more")
        if path not in OWNER_FILES:
            target, shown = self._memory_path(path)
            return read_lines(target, shown, path, from_line, lines)
        if self.scope == "shared":
            raise PathNotAllowed(f"{path}: not available in a shared session")
        target = self.workspace.resolve_owner_file(path)
        return read_lines(target, path, path, from_line, lines)

    def files(self: _Reader) -> list[MemoryFile]:
        """The workspace's files as a person browses them: MEMORY.md, USER.md, AGENTS.md,
        DREAMS.md, daily logs, session archives, topic notes, skills and extra paths, each with
        whether the index holds it (MEMORY.md and USER.md are left out in a shared session)."""
        rows = self.index.read(lambda store: store.file_rows())
        out: list[MemoryFile] = []
        for name in OWNER_FILES:
            try:
                target = self.workspace.resolve_owner_file(name)
                st = target.lstat()
            except (PathNotAllowed, OSError):
                continue
            if target.is_file():
                out.append(MemoryFile(name, file_kind(name), None, st.st_size, st.st_mtime, False))
        for entry in self.workspace.iter_files():
            kind = "extra" if entry.source == "extra" else file_kind(entry.path)
            row = rows.get(entry.path)
            out.append(
                MemoryFile(
                    entry.path,
                    kind,
                    is_daily_log(entry.path) or archive_date(entry.path),
                    entry.size,
                    entry.mtime_ns / 1e9,
                    row is not None,
                    row.warning if row is not None else None,
                )
            )
        if self.scope == "shared":
            out = [f for f in out if f.path not in PRIVATE_FILES]
        return out

    def memory_budget(self: _Reader) -> BudgetUsage:
        """How full MEMORY.md is against the dreaming budget: person-written vs generated text,
        and which generated entries would be evicted first.

        Raises:
            PathNotAllowed: in a shared session.
        """
        from memdir.dreaming.budget import budget_usage

        if self.scope == "shared":
            raise PathNotAllowed(f"{MEMORY_FILE} is not available in a shared session")
        return budget_usage(self.read(MEMORY_FILE).text)

    def history(self: _Reader, *, limit: int | None = None) -> list[HistoryEvent]:
        """What memdir wrote on its own and when, newest first: the audit trail (:meth:`log`)
        and the files' own records (see :mod:`memdir.history`); at most ``limit`` events.

        Raises:
            PathNotAllowed: in a shared session (the history shows MEMORY.md).
        """
        from memdir.history import read_history

        if self.scope == "shared":
            raise PathNotAllowed("the history shows MEMORY.md: run it in a private session")
        audit = self.log(limit=limit)
        return read_history(self.workspace, self.recalls.entries(), audit=audit, limit=limit)


def read_lines(
    target: Path, shown: str, asked: str, from_line: int | None, lines: int | None
) -> GetResult:
    """Read ``target`` (shown as ``shown``) whole or the range ``from_line`` + ``lines``."""
    try:
        data = read_regular_file(target)  # never a symlink, never a FIFO (it would block)
    except FileNotFoundError:
        return GetResult(shown, "", from_line or 1, 0, 0, exists=False)
    except OSError as exc:
        raise WorkspaceError(f"{asked}: cannot be read ({exc.strerror})") from exc
    text, warning = decode_markdown(data, asked)  # the indexer's verdict and its text
    if text is None:
        reason = (warning or "binary").removesuffix(": not indexed")
        raise PathNotAllowed(
            f"{asked}: {reason}, not a Markdown note: memdir neither indexes nor shows it"
        )
    all_lines = text.split("\n")
    if text.endswith("\n"):
        all_lines.pop()
    start = (from_line or 1) - 1
    end = len(all_lines) if lines is None else start + lines
    selected = all_lines[start:end]
    body = "\n".join(selected)
    if from_line is None and lines is None:
        body = text
    return GetResult(shown, body, start + 1, len(selected), len(all_lines), exists=True)


def copy_lines(
    copy: FileCopy, shown: str, from_line: int | None, lines: int | None, *, asked: bool
) -> GetResult:
    """``memory_get`` answered from another host's copy in the shared index (lines its
    chunks do not cover, blank ones, come back empty); ``asked``: the caller named the copy
    (a search hit's), else this host has no such file."""
    start = (from_line or 1) - 1
    end = copy.total_lines if lines is None else min(copy.total_lines, start + lines)
    selected = [copy.lines.get(n, "") for n in range(start + 1, end + 1)]
    why = "the hit's copy" if asked else f"{shown} is not on this host yet"
    note = (
        f"{why}: read from the shared index, as host {copy.host} indexed it; "
        "`memdir team sync` brings the file here"
    )
    return GetResult(
        shown,
        "\n".join(selected),
        start + 1,
        len(selected),
        copy.total_lines,
        True,
        copy.host,
        note,
    )


__all__ = ["PRIVATE_FILES", "BrowseMixin", "GetResult", "MemoryFile", "copy_lines", "read_lines"]
