"""What memdir wrote on its own, and when, read back from the files' own records.

memdir's automatic writers leave marks that say what they wrote:

- dream promotions: the generated blocks of MEMORY.md (``## Promoted DATE`` and one marker per
  entry naming its source lines, :mod:`memdir.markdown.generated`); the recall store keeps the
  time of each promotion; ``DREAMS.md`` holds the diary of applied runs (``--diary``);
- session archives: the header of ``memory/<date>-<slug>.md`` (date, session, source, time);
- daily logs: flushes, captures and ``memory_write`` append to ``memory/YYYY-MM-DD.md``. A daily
  log line does not say who wrote it (a person may append too), so a daily log appears as one
  event per day with its number of entries.

Since the audit trail (:mod:`memdir.audit`), every automatic write is also recorded on its own:
a git commit by memdir, or a line of ``.memdir/audit.jsonl``, naming the component (flush,
capture, extract, archive, dream, write, forget…), why, and the lines. :func:`audit_events` turns
those records into events; :func:`read_history` gathers both, newest first, and drops a file
record that an audit record tells better (the same dream block, the same archive). Writes made
before the trail existed keep their file records only. A record that cannot be read (a symlink,
a missing or unreadable file) is skipped, never fatal.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memdir.audit.records import AuditRecord
from memdir.dreaming.store import RecallEntry
from memdir.errors import PathNotAllowed
from memdir.lifecycle.archive import read_archive_header
from memdir.markdown.generated import (
    BEGIN_RE,
    END_RE,
    ENTRY_RE,
    HEADING_RE,
    find_blocks,
    split_lines,
)
from memdir.workspace.fileio import read_regular_file
from memdir.workspace.layout import (
    DREAMS_FILE,
    MEMORY_FILE,
    OWNER_FILES,
    Workspace,
    archive_date,
    is_daily_log,
)

#: Added lines an audit event lists.
AUDIT_LINES_SHOWN = 8
#: How much of an archive is read to find its header.
ARCHIVE_HEADER_BYTES = 4096
#: Daily logs larger than this are not read to count their entries.
DAILY_MAX_BYTES = 2 * 1024 * 1024

_DIARY_HEADING = re.compile(r"^## (\d{4}-\d{2}-\d{2}) (\d{2}:\d{2})\s*$")
_BULLET = re.compile(r"^\s*[-*+] \S")


@dataclass(frozen=True)
class HistoryEvent:
    """One automatic write (or one day of them), as its record tells it.

    Attributes:
        when: ISO date (``2026-11-30``) or date-time (``2026-11-30T03:00``).
        kind: ``dream`` (entries promoted into MEMORY.md), ``diary`` (a DREAMS.md entry),
            ``archive`` (a session saved on /new) or ``daily`` (a day's daily log).
        path: the file written (workspace-relative).
        line: the first line of the record in that file (1-based), when it has one.
        summary: one line saying what was written.
        details: the written lines, or what the record says about them.
        record: where this was read from (``MEMORY.md markers``, ``archive header`` …).
    """

    when: str
    kind: str
    path: str
    line: int | None
    summary: str
    details: list[str] = field(default_factory=list)
    record: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "when": self.when,
            "kind": self.kind,
            "path": self.path,
            "line": self.line,
            "summary": self.summary,
            "details": self.details,
            "record": self.record,
        }


def _dream_marker(line: str) -> bool:
    """A generated line that says nothing by itself (a block's heading or its markers)."""
    return any(r.match(line) for r in (BEGIN_RE, END_RE, HEADING_RE))


def _entry_text(line: str) -> str | None:
    """A promoted entry line as a person reads it (``text (from path#La-Lb)``); None when the
    line is not one."""
    match = ENTRY_RE.match(line.rstrip("\r\n"))
    if match is None:
        return None
    path, first, last, _ = match.groups()
    text = line.split(" <!-- memdir:promoted ", 1)[0].removeprefix("- ")
    return f"{text} (from {path}#L{first}-L{last})"


def dream_events(memory_text: str, promoted: Iterable[RecallEntry] = ()) -> list[HistoryEvent]:
    """One event per generated block of MEMORY.md, timed by the recall store when it knows
    when the block's entries were promoted (else dated by the block's heading)."""
    times: dict[str, datetime] = {
        e.key: e.promoted_at for e in promoted if e.promoted_at is not None
    }
    lines = split_lines(memory_text)
    events = []
    for block in find_blocks(lines):
        details, keys = [], []
        for index in block.entries:
            match = ENTRY_RE.match(lines[index].rstrip("\r\n"))
            if match is None:
                continue
            details.append(_entry_text(lines[index]) or "")
            keys.append(match.group(4))
        stamps = sorted(
            t for k in keys if (t := times.get(k)) is not None and t.date().isoformat() == block.day
        )
        when = stamps[0].isoformat(timespec="minutes") if stamps else block.day
        count = len(block.entries)
        summary = f"dream: promoted {count} {'entry' if count == 1 else 'entries'} into MEMORY.md"
        if not count:
            summary = "dream: an empty promoted block (its entries were evicted or removed)"
        line = block.begin + 1
        events.append(
            HistoryEvent(when, "dream", MEMORY_FILE, line, summary, details, "MEMORY.md markers")
        )
    return events


def diary_events(text: str, path: str = DREAMS_FILE) -> list[HistoryEvent]:
    """One event per ``## YYYY-MM-DD HH:MM`` entry of the dream diary."""
    events: list[HistoryEvent] = []
    current: tuple[str, int, list[str]] | None = None

    def close() -> None:
        if current is not None:
            when, line, body = current
            summary = next((b for b in body if not b.startswith("- ")), "dream run")
            details = [b.removeprefix("- ") for b in body if b.startswith("- ")]
            events.append(
                HistoryEvent(when, "diary", path, line, f"dream diary: {summary}", details, path)
            )

    for number, raw in enumerate(text.splitlines(), start=1):
        heading = _DIARY_HEADING.match(raw)
        if heading:
            close()
            current = (f"{heading.group(1)}T{heading.group(2)}", number, [])
        elif current is not None and raw.strip():
            current[2].append(raw.strip())
    close()
    return events


def archive_event(path: str, head: str) -> HistoryEvent | None:
    """The event of a session archive, from the first lines of its file."""
    header = read_archive_header(head)
    if header is None:
        return None
    when = header.archived.replace(" ", "T")
    details = [f"session {header.session}", f"started {header.date}", f"{header.messages}"]
    return HistoryEvent(
        when,
        "archive",
        path,
        1,
        f"archive: session saved from {header.source or 'a conversation'}",
        [d for d in details if d.split(" ", 1)[-1]],
        "archive header",
    )


def daily_event(path: str, day: str, text: str, mtime: float) -> HistoryEvent:
    """The event of one daily log: its entries (the last few shown) and when it last changed."""
    entries = [line.strip() for line in text.splitlines() if _BULLET.match(line)]
    changed = datetime.fromtimestamp(mtime).isoformat(sep=" ", timespec="minutes")
    count = len(entries)
    return HistoryEvent(
        day,
        "daily",
        path,
        1,
        f"daily log: {count} {'entry' if count == 1 else 'entries'} (last change {changed})",
        [e.removeprefix("- ") for e in entries[-5:]],
        "daily log (flushes, captures, memory_write and a person's own lines)",
    )


def audit_event(record: AuditRecord) -> HistoryEvent:
    """The event of one audit record: who wrote, why, where, and the lines added/removed."""
    when = record.time
    if when.tzinfo is not None:
        when = when.astimezone().replace(tzinfo=None)
    # The memory file it wrote, rather than the diary it also appended to.
    first = next((f for f in record.files if f.path not in OWNER_FILES), None)
    first = first or (record.files[0] if record.files else None)
    added = [(n, t) for n, t in (first.added if first else ()) if t.strip()]
    line = added[0][0] if added else None
    details: list[str] = []
    for change in record.files:
        shown = [(n, t) for n, t in change.added if t.strip() and not _dream_marker(t)]
        details.extend(
            f"+ {change.path}#L{n}: {_entry_text(t) or t}" for n, t in shown[:AUDIT_LINES_SHOWN]
        )
        details.extend(f"− {change.path}: {text}" for _, text in change.removed[:AUDIT_LINES_SHOWN])
    details.extend(
        f"{label} {value}"
        for label, value in (("session", record.session), ("via", record.via))
        if value and f"via {value}" != record.summary
    )
    where = f"git commit {record.commit[:10]}" if record.commit else "audit log .memdir/audit.jsonl"
    if record.note:
        where += f" ({record.note})"
    return HistoryEvent(
        when.isoformat(timespec="minutes"),
        record.component,
        first.path if first else "",
        line,
        record.message,
        details,
        where,
    )


def audit_events(records: Iterable[AuditRecord]) -> list[HistoryEvent]:
    """The events of audit records (see :func:`audit_event`)."""
    return [audit_event(record) for record in records]


def _told_by_audit(event: HistoryEvent, audited: list[HistoryEvent]) -> bool:
    """Whether an audit event records the same write as this file-record event."""
    if event.kind == "dream":
        day = event.when[:10]
        return any(a.kind == "dream" and a.when[:10] == day for a in audited)
    if event.kind == "archive":
        return any(a.kind == "archive" and a.path == event.path for a in audited)
    return False


def read_history(
    workspace: Workspace,
    recalls: Iterable[RecallEntry] = (),
    *,
    audit: Iterable[AuditRecord] = (),
    limit: int | None = None,
) -> list[HistoryEvent]:
    """Every automatic write the workspace records, newest first (see the module doc).

    Args:
        workspace: the workspace.
        recalls: recall entries (their promotion times date the dream blocks).
        audit: the audit trail's records (``Memory.log``).
        limit: at most this many events; only the newest ``limit`` daily logs and archives are
            read then (a vault of years of daily logs is not read whole for one page).
    """
    audited = audit_events(audit)
    events = read_file_records(workspace, recalls, limit=limit)
    events = [e for e in events if not _told_by_audit(e, audited)] + audited
    events.sort(key=lambda e: (e.when, e.kind, e.path, e.line or 0), reverse=True)
    return events[:limit]


def read_file_records(
    workspace: Workspace, recalls: Iterable[RecallEntry] = (), *, limit: int | None = None
) -> list[HistoryEvent]:
    """The events the files themselves record (dream blocks, diary, archives, daily logs)."""
    events: list[HistoryEvent] = []
    memory_text = _read(_safe(lambda: workspace.resolve_memory_path(MEMORY_FILE)))
    if memory_text:
        events.extend(dream_events(memory_text, recalls))
    diary = _read(_safe(lambda: workspace.resolve_owner_file(DREAMS_FILE)))
    if diary:
        events.extend(diary_events(diary))
    dated = []
    for entry in workspace.iter_files():
        if entry.source != "memory":
            continue
        day = is_daily_log(entry.path) or archive_date(entry.path)
        if day is not None:
            dated.append((day, entry))
    dated.sort(key=lambda item: (item[0], item[1].path), reverse=True)
    for day, entry in dated[:limit]:
        if is_daily_log(entry.path):
            if entry.size <= DAILY_MAX_BYTES:
                text = _read(entry.abspath) or ""
                events.append(daily_event(entry.path, day, text, entry.mtime_ns / 1e9))
        else:
            event = archive_event(entry.path, _read(entry.abspath, ARCHIVE_HEADER_BYTES) or "")
            if event is not None:
                events.append(event)
    events.sort(key=lambda e: (e.when, e.kind, e.path, e.line or 0), reverse=True)
    return events[:limit]


def _safe(resolve: Callable[[], Path]) -> Path | None:
    try:
        return resolve()
    except PathNotAllowed:
        return None


def _read(path: Path | None, limit: int = -1) -> str | None:
    if path is None:
        return None
    try:  # no symlink, no FIFO (it would block): memdir.workspace.fileio
        data = read_regular_file(path, limit=None if limit < 0 else limit)
    except (OSError, PathNotAllowed):
        return None
    return data.decode("utf-8", errors="replace").removeprefix("\ufeff")


__all__ = [
    "HistoryEvent",
    "archive_event",
    "audit_event",
    "audit_events",
    "daily_event",
    "diary_events",
    "dream_events",
    "read_file_records",
    "read_history",
]
