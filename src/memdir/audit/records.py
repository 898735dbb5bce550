"""What the audit trail stores about one automatic write: :class:`AuditRecord`.

A record says which component wrote (``flush``, ``capture``, ``extract``, ``archive``,
``dream``, ``write``, ``forget``, ``hook``, ``init``), why (its one-line summary), when, in
which session or through which tool, and per file the lines it removed and added. In a git
workspace the record is a commit (the lines are its diff); otherwise a line of
``.memdir/audit.jsonl`` (the lines are stored with it).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

#: Every component that writes memory files on its own.
COMPONENTS = (
    "archive",
    "capture",
    "dream",
    "extract",
    "flush",
    "forget",
    "hook",
    "init",
    "undo",
    "write",
)


def line_hash(text: str) -> str:
    """The hash by which a line is recognised (its text without terminator or end spaces)."""
    return hashlib.sha256(text.rstrip().encode("utf-8", "surrogateescape")).hexdigest()[:16]


@dataclass(frozen=True)
class FileChange:
    """The lines one record removed from and added to one file.

    Attributes:
        path: workspace-relative posix path.
        removed: (1-based line number before the change, text) of each removed line.
        added: (1-based line number after the change, text) of each added line.
    """

    path: str
    removed: tuple[tuple[int, str], ...] = ()
    added: tuple[tuple[int, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "removed": [{"line": n, "text": t} for n, t in self.removed],
            "added": [{"line": n, "text": t} for n, t in self.added],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FileChange:
        return cls(
            str(data["path"]),
            tuple((int(x["line"]), str(x["text"])) for x in data.get("removed", ())),
            tuple((int(x["line"]), str(x["text"])) for x in data.get("added", ())),
        )


@dataclass(frozen=True)
class AuditRecord:
    """One automatic write, as ``memdir log`` shows it.

    Attributes:
        id: memdir's id of the write (also a ``Memdir-Id:`` trailer of its commit).
        time: when it was recorded (timezone-aware).
        component: who wrote (one of :data:`COMPONENTS`).
        summary: why, in one line (``3 facts from session 7f3c…``).
        files: the lines changed, per file.
        session: the chat session, when there was one.
        via: the tool or command that asked for the write (``MCP memory_write``).
        commit: the git commit id, when the record is a commit.
        note: why a git workspace's record is in the log file instead (the path is ignored by
            git, or the commit failed).
    """

    id: str
    time: datetime
    component: str
    summary: str
    files: tuple[FileChange, ...] = ()
    session: str | None = None
    via: str | None = None
    commit: str | None = None
    note: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def message(self) -> str:
        """The first line of the commit message: ``component: summary``."""
        return f"{self.component}: {self.summary}"

    @property
    def paths(self) -> list[str]:
        return [change.path for change in self.files]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "time": self.time.isoformat(),
            "component": self.component,
            "summary": self.summary,
            "message": self.message,
            "session": self.session,
            "via": self.via,
            "commit": self.commit,
            "note": self.note,
            "files": [change.to_dict() for change in self.files],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AuditRecord:
        return cls(
            id=str(data["id"]),
            time=datetime.fromisoformat(str(data["time"])),
            component=str(data["component"]),
            summary=str(data["summary"]),
            files=tuple(FileChange.from_dict(f) for f in data.get("files", ())),
            session=data.get("session"),
            via=data.get("via"),
            commit=data.get("commit"),
            note=data.get("note"),
        )
