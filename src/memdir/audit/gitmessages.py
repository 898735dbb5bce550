"""The messages of memdir's commits: what they say, and the trailers ``memdir log`` reads back
(docs/governance.md#the-audit-trail)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from dulwich.objects import Commit

from memdir.audit.records import AuditRecord

TRAILER_RE = re.compile(r"^(Memdir-[A-Za-z]+):[ \t]*(.*)$")


def commit_message(record: AuditRecord) -> str:
    """``component: summary``, a line per file with its line counts, then the trailers
    ``memdir log`` reads back."""
    lines = [record.message, ""]
    for change in record.files:
        lines.append(f"{change.path}: +{len(change.added)} -{len(change.removed)} lines")
    lines.append("")
    lines.append(f"Memdir-Id: {record.id}")
    lines.append(f"Memdir-Component: {record.component}")
    if record.session:
        lines.append(f"Memdir-Session: {record.session}")
    if record.via:
        lines.append(f"Memdir-Via: {record.via}")
    return "\n".join(lines) + "\n"


def trailers(message: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    if b"Memdir-Id:" not in message:
        return out
    for line in message.decode("utf-8", "replace").splitlines():
        match = TRAILER_RE.match(line.strip())
        if match:
            out[match.group(1)] = match.group(2).strip()
    return out


def first_line(message: bytes) -> str:
    return message.decode("utf-8", "replace").split("\n", 1)[0]


def commit_time(commit: Commit) -> datetime:
    zone = timezone(timedelta(seconds=commit.commit_timezone))
    return datetime.fromtimestamp(commit.commit_time, zone)
