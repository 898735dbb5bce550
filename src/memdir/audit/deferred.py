"""Writes made while git could not take memdir's commit, kept until they are safe (issue 27).

On a detached HEAD or in the middle of a rebase (:mod:`memdir.audit.gitstate`), memdir writes
the files and records the write in ``.memdir/audit.jsonl``, but a person's next ordinary
command may still take the new lines away: ``git rebase --abort`` resets the tracked files it
touched. So each such write is also kept here, in ``.memdir/audit/deferred/<record id>.json``
(what each file was before memdir wrote, and after). At the next automatic write made when git
is safe again (:func:`memdir.audit.seam.recover`), every kept write whose lines are no longer
in its file is put back (its change carried onto the file as it is now,
:func:`memdir.audit.merge.carry_change`), recorded and committed as a ``write`` of its own;
then the entry goes. ``memdir status`` counts the entries waiting.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from memdir.fileio import atomic_write, read_regular_file

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


__all__ = ["Deferred", "count", "drop", "folder", "pending", "save"]
