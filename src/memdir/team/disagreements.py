"""What two hosts changed differently, kept for ``memdir review`` (docs/design.md#team-memory).

A sync keeps both versions of lines both sides changed (:class:`memdir.team.merge.Contradiction`)
and appends one JSON line per pair to ``.memdir/team/disagreements.jsonl``. ``memdir review``
lists a pair while the file still holds a line of each side: once a person deletes or edits
one of them, it is resolved.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from typing import Any

from memdir.audit.rewrite import read_text
from memdir.errors import MemdirError
from memdir.team.merge import Contradiction
from memdir.workspace.fileio import locked_append
from memdir.workspace.layout import Workspace

LOG_FILE = "team/disagreements.jsonl"


def record(workspace: Workspace, items: list[Contradiction], commit: str) -> None:
    """Append the disagreements a sync kept in merge commit ``commit``."""
    if not items:
        return
    path = workspace.state_dir / LOG_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join(
        json.dumps({**asdict(item), "commit": commit, "time": time.time()}) + "\n" for item in items
    )
    locked_append(path, lines, lock_dir=workspace.lock_dir)


def open_disagreements(workspace: Workspace) -> list[dict[str, Any]]:
    """The recorded disagreements whose file still holds a line of each side, oldest first."""
    try:
        raw = (workspace.state_dir / LOG_FILE).read_text(encoding="utf-8")
    except OSError:
        return []
    texts: dict[str, set[str]] = {}
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, tuple[str, ...], tuple[str, ...]]] = set()
    for line in raw.splitlines():
        try:
            item = json.loads(line)
            path, ours, theirs = item["path"], tuple(item["ours"]), tuple(item["theirs"])
        except (ValueError, KeyError, TypeError):
            continue
        if (path, ours, theirs) in seen:
            continue
        seen.add((path, ours, theirs))
        if path not in texts:
            try:
                texts[path] = {
                    x.rstrip("\r") for x in (read_text(workspace, path) or "").split("\n")
                }
            except MemdirError:
                texts[path] = set()
        have = texts[path]
        if any(x in have for x in ours) and any(x in have for x in theirs):
            out.append(item)
    return out


__all__ = ["LOG_FILE", "open_disagreements", "record"]
