"""The audit trail of a workspace without git: ``.memdir/audit.jsonl``, one record a line.

Append-only: each record is one line appended whole or not at all on an ``O_APPEND``
descriptor, fsynced, under the workspace write lock (:func:`memdir.workspace.fileio.append_whole`).
A line cut short (a person may edit the file) is skipped when read, never fatal.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from memdir.audit.records import AuditRecord
from memdir.workspace.fileio import append_whole

LOG_NAME = "audit.jsonl"


class JsonlTrail:
    """Records in ``<state_dir>/audit.jsonl``."""

    kind = "log"

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / LOG_NAME

    def append(self, record: AuditRecord) -> AuditRecord:
        """Append ``record`` durably; return it."""
        line = json.dumps(record.to_dict(), ensure_ascii=True) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            data = line.encode("ascii")
            # A previous line cut short (edited by hand) must not swallow this one.
            if os.fstat(fd).st_size and not _ends_with_newline(self.path):
                data = b"\n" + data
            append_whole(fd, data, self.path)  # the whole line or nothing
        finally:
            os.close(fd)
        return record

    def records(self) -> Iterator[AuditRecord]:
        """Every record, oldest first; unreadable lines are skipped."""
        try:
            fh = self.path.open("r", encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return
        with fh:
            for line in fh:
                line = line.strip()
                if not line:
                    continue
                try:
                    yield AuditRecord.from_dict(json.loads(line))
                except (ValueError, KeyError, TypeError):
                    continue

    def has(self, record_id: str) -> bool:
        return any(r.id == record_id for r in self.records())


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"
