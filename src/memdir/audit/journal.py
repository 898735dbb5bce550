"""The write-ahead journal that makes an audited write all-or-nothing across a crash.

Before memdir changes a file, the operation's intent (every file's text before and the text it
is about to write) is saved to ``.memdir/audit/pending/<id>.json`` (temp file + rename; not
fsynced: a killed process leaves its writes in the page cache, and fsyncing costs two disk
flushes per write; after a power cut an intent may be missing, and the change it announced then
shows in ``git status`` as an uncommitted change rather than being recorded). The record
is stored (commit or log line) after the writes, then the intent is removed. A process killed in
between leaves the intent behind; the next audited write (or ``memdir log``) finds it under the
write lock and finishes the job: files that hold the new text are recorded, files still holding
the old text were never written and are left out, and a record already stored (its id is in the
trail) is not stored twice. So a kill -9 at any point leaves either no record and no change, or
the change and exactly one record.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

PENDING_DIR = "audit/pending"


@dataclass
class Intent:
    """An audited operation as the journal holds it.

    Attributes:
        files: workspace-relative path → (text before the operation or None for a new file,
            text after the latest write).
    """

    id: str
    component: str
    time: datetime
    summary: str | None = None
    session: str | None = None
    via: str | None = None
    files: dict[str, tuple[str | None, str]] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(
            {
                "id": self.id,
                "component": self.component,
                "time": self.time.isoformat(),
                "summary": self.summary,
                "session": self.session,
                "via": self.via,
                "files": {p: {"before": b, "after": a} for p, (b, a) in self.files.items()},
            },
            ensure_ascii=True,  # a lone surrogate (a byte that is not UTF-8) stays an escape
        )

    @classmethod
    def from_json(cls, text: str) -> Intent:
        data: dict[str, Any] = json.loads(text)
        return cls(
            id=str(data["id"]),
            component=str(data["component"]),
            time=datetime.fromisoformat(str(data["time"])),
            summary=data.get("summary"),
            session=data.get("session"),
            via=data.get("via"),
            files={p: (f.get("before"), str(f["after"])) for p, f in data["files"].items()},
        )


def pending_dir(state_dir: Path) -> Path:
    return state_dir / PENDING_DIR


def save(state_dir: Path, intent: Intent) -> None:
    """Write (or rewrite) the intent, durably, before the file write it announces."""
    folder = pending_dir(state_dir)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{intent.id}.json"
    temporary = folder / f".{intent.id}.{os.getpid()}.tmp"
    temporary.write_text(intent.to_json(), encoding="utf-8")
    os.replace(temporary, target)


def clear(state_dir: Path, intent_id: str) -> None:
    """Remove an intent whose record is stored."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(pending_dir(state_dir) / f"{intent_id}.json")


def clear_temporary(state_dir: Path) -> None:
    """Remove half-written intents a kill left (temporary files of the atomic write)."""
    with contextlib.suppress(OSError):
        for leftover in pending_dir(state_dir).glob(".*.tmp"):
            leftover.unlink()


def pending(state_dir: Path) -> list[Intent]:
    """The intents left by operations that did not finish, oldest first. An unreadable intent
    (a crash while it was first written leaves none: it is written atomically) is skipped."""
    folder = pending_dir(state_dir)
    try:
        names = sorted(p for p in folder.iterdir() if p.suffix == ".json")
    except OSError:
        return []
    intents = []
    for path in names:
        try:
            intents.append(Intent.from_json(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError):
            continue
    return sorted(intents, key=lambda i: i.time)
