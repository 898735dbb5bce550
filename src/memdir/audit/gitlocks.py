"""Git ``.lock`` files a killed memdir process left behind, and their removal.

Before :class:`memdir.audit.git.GitTrail` writes objects, moves a branch or rewrites the index
(each under a ``.lock`` file of git's protocol), it notes in ``.memdir/audit/git-locks.json`` its
pid, the time, and the lock paths with the content it will write. :func:`clear_stale_locks`, run
under the workspace write lock before the next audited write, removes the locks of that note
when its process is dead, and no others. Kept free of dulwich so that it loads fast.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from memdir.workspace.fileio import pid_alive

LOCK_MARKER = "audit/git-locks.json"


def clear_stale_locks(state_dir: Path) -> list[str]:
    """Remove the git ``.lock`` files a killed memdir process left (see the module docstring);
    call under the workspace write lock. Returns the paths removed."""
    marker = state_dir / LOCK_MARKER
    try:
        note = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    pid = int(note.get("pid", 0))
    if pid and pid != os.getpid() and pid_alive(pid):
        return []  # still running (it cannot be: we hold the workspace lock), leave it
    removed = []
    since = float(note.get("time", 0)) - 1
    objects = note.get("objects")
    if objects:  # dulwich writes each loose object as objects/xx/<id>.lock, then renames it
        for leftover in Path(objects).glob("??/*.lock"):
            with contextlib.suppress(OSError):
                if leftover.stat().st_mtime >= since:
                    leftover.unlink()
                    removed.append(str(leftover))
    ref_lock = note.get("ref_lock")
    if ref_lock:
        expect = str(note.get("expect", "")).encode("ascii") + b"\n"
        with contextlib.suppress(OSError):
            content = Path(ref_lock).read_bytes()
            if expect.startswith(content):  # empty, partial or whole: the lock memdir wrote
                os.unlink(ref_lock)
                removed.append(ref_lock)
    index_lock = note.get("index_lock")
    if index_lock:
        with contextlib.suppress(OSError):
            if os.stat(index_lock).st_mtime >= since:
                os.unlink(index_lock)
                removed.append(index_lock)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(marker)
    return removed
