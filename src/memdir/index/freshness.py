"""What a search must look at before it answers (docs/design.md#index): the files that changed
since the index last saw them, found cheaply.

Statting every file before every search is exact but grows with the vault (82–111 ms at 10,000
files). So a search looks at every file only when something may have changed:

- a file watcher runs (:class:`memdir.watch.WorkspaceWatcher`, as in ``memdir serve`` and the
  MCP server): it sees every change and syncs it; a search looks only at the files the watcher
  saw change and has not synced yet (:func:`memdir.index.changes.scan_paths`), and by the rules
  below when it cannot say which (a folder moved, the first sync);
- no watcher: a search stats the folders (a file added, removed or renamed — as editors save —
  changes its folder's time) and looks at every file when one changed, when this process wrote
  a file, or when the last full look is :data:`FULL_SCAN_S` old — or, in a vault so big
  that a full look takes longer than a twentieth of that, :data:`SCAN_SHARE` times as long as
  the last full look took (so looking costs at most 5 % of a search's time: ~8 s at 10,000
  files). An edit made in place by another program (no folder changes) is therefore seen
  within that time, any other change at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from memdir.index.base import IndexBackend
from memdir.index.changes import scan_paths
from memdir.index.sync import DirtyState, scan_dirty
from memdir.workspace.filewalk import Skipped, folders_changed
from memdir.workspace.layout import Workspace

#: The longest a search trusts folder times alone before it looks at every file again...
FULL_SCAN_S = 2.0
#: ...unless that is shorter than this many times the last full look took.
SCAN_SHARE = 20.0


class Freshness:
    """Decides, before each search, which files to look at (see the module docstring)."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        #: Set by a running watcher: the files it saw change and has not synced yet (absolute
        #: paths; empty: none), or None when it cannot say which.
        self.watcher: Callable[[], frozenset[str] | None] | None = None
        self._folders: dict[str, int] = {}
        self._scanned_at: float | None = None
        self._scan_seconds = 0.0
        self._writes = -1

    def dirty(self, store: IndexBackend, skipped: list[Skipped] | None = None) -> DirtyState | None:
        """The changed files, or None when there is no need to look."""
        if self._writes != self.workspace.writes:  # this process wrote a file
            return self.scan(store, skipped)
        watcher = self.watcher  # read once: a watcher stopping on another thread clears it
        pending = watcher() if watcher is not None else None
        if pending is not None:
            return scan_paths(store, self.workspace, pending) if pending else None
        if (
            self._scanned_at is not None
            and time.monotonic() - self._scanned_at < self.trust_seconds()
            and not folders_changed(self._folders)
        ):
            return None
        return self.scan(store, skipped)

    def scan(self, store: IndexBackend, skipped: list[Skipped] | None = None) -> DirtyState:
        """Look at every file now."""
        writes = self.workspace.writes
        folders: dict[str, int] = {}
        started = time.monotonic()
        dirty = scan_dirty(store, self.workspace, skipped, folders)
        self._folders, self._scanned_at, self._writes = folders, started, writes
        self._scan_seconds = time.monotonic() - started
        return dirty

    def trust_seconds(self) -> float:
        """How long folder times alone are trusted after a full look."""
        return max(FULL_SCAN_S, SCAN_SHARE * self._scan_seconds)

    def forget(self) -> None:
        """Look at every file before the next search (after a sync elsewhere in the process)."""
        self._scanned_at = None
