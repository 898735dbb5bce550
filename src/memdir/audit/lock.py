"""The workspace write lock: one writer of memory files at a time, across processes.

Every automatic write (and its audit record) happens under it, so two MCP servers or a chat and
a nightly dream never interleave a write with another's commit. It is re-entrant within a
thread (a flush holds it while each line goes through ``memory_write``, which takes it too);
other threads and processes wait (``flock`` locks belong to an open file, so a second thread's
lock file conflicts like another process's).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from memdir.errors import WorkspaceError
from memdir.workspace.fileio import READ_ONLY_ERRNOS, read_only_error

LOCK_TIMEOUT_S = 30.0
LOCK_NAME = "memory-write.lock"

_held = threading.local()


def _depths() -> dict[str, int]:
    depths: dict[str, int] | None = getattr(_held, "depths", None)
    if depths is None:
        depths = _held.depths = {}
    return depths


@contextlib.contextmanager
def workspace_lock(state_dir: Path, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the write lock of the workspace whose state folder is ``state_dir``.

    Raises:
        WorkspaceError: the folder cannot be written (:class:`~memdir.errors.ReadOnly` when it
            is read-only), or another process held the lock for ``timeout`` seconds.
    """
    key = str(state_dir)
    depths = _depths()
    if depths.get(key, 0) > 0:
        depths[key] += 1
        try:
            yield
        finally:
            depths[key] -= 1
        return
    lock_dir = state_dir / "locks"
    try:
        lock_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WorkspaceError(f"cannot write to {state_dir.parent}: {exc.strerror}") from exc
    try:
        lock = FileLock(str(lock_dir / LOCK_NAME)).acquire(timeout=timeout)
    except Timeout as exc:
        raise WorkspaceError(
            f"another process has held the memory write lock for {timeout:.0f} s; try again"
        ) from exc
    except OSError as exc:  # a read-only mount or folder (writers check first: a safety net)
        if exc.errno in READ_ONLY_ERRNOS:
            raise read_only_error(lock_dir / LOCK_NAME, exc) from exc
        raise
    with lock:
        depths[key] = 1
        try:
            yield
        finally:
            depths.pop(key, None)
