"""Keep the index current while memdir runs: a file watcher with a debounce
(docs/design.md#index).

    with Memory("~/notes") as mem, WorkspaceWatcher(mem):
        ...  # edits to MEMORY.md, memory/**, skills/** and extra paths are indexed within ~2 s

A burst of changes (an editor saving, an agent appending ten bullets) becomes one
:meth:`Memory.sync` once the files have been quiet for ``debounce`` seconds (1.5 s), and at the
latest ``max_delay`` seconds after the first change, so a file written every second is still
indexed. Changes under ``.memdir/``, in hidden folders and to files that are not indexable
Markdown are ignored. Syncs run on the watcher's thread under a lock the caller may share (the
MCP server serialises its tool calls with the same lock); a failed sync is reported to
``on_error`` and retried on the next change, never raised. A sync looks only at the files whose
events arrived (:func:`memdir.index.changes.scan_paths`), and at every file after a folder
event, at the first sync, after a failed one, for a burst of over :data:`MAX_LISTED_CHANGES`
files and when the last such look is :data:`FULL_LOOK_EVERY_S` old (so a change no event
reported is caught up at the next change); searches meanwhile look at those same files
(:meth:`WorkspaceWatcher.pending`). With ``warm`` (the MCP server), after each sync, still under
the lock, what the next search would load is loaded (:meth:`IndexManager.warm`: the vector
matrix, ~2 s at 10,000 files), so no search waits for it.

Several processes may work on one workspace at once (two servers, a watcher, a CLI search): the
index is in WAL mode with a busy timeout and one cross-process writer lock, and
:func:`retry_when_busy` absorbs the rare "database is locked" that SQLite still reports.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch

from memdir.index.sync import SyncReport
from memdir.memory.facade import Memory
from memdir.workspace.layout import (
    MEMORY_DIR,
    MEMORY_FILE,
    SKILLS_DIR,
    STATE_DIR,
    Workspace,
    is_within,
)

#: Quiet time after the last change before the index is synced (seconds).
DEBOUNCE_S = 1.5
#: Longest wait after the first change of a burst before syncing anyway (seconds).
MAX_DELAY_S = 10.0
#: A sync this long after the last look at every file looks at every file again, so a change
#: the watcher did not see (an event queue overflow, a folder it could not watch) is caught up
#: at the next change, as when every sync looked at every file (seconds).
FULL_LOOK_EVERY_S = 60.0
#: More changed files than this in one burst (a checkout): one look at every file instead.
MAX_LISTED_CHANGES = 1000
#: Events that do not change a file's content or metadata.
_IGNORED_EVENTS = frozenset({"opened", "closed_no_write"})

log = logging.getLogger("memdir.watch")
T = TypeVar("T")


def retry_when_busy(fn: Callable[[], T], *, attempts: int = 5, delay: float = 0.2) -> T:
    """Call ``fn``; when SQLite says the database is locked or busy, wait and try again.

    The wait doubles from ``delay`` (0.2, 0.4, 0.8, 1.6 s); the last failure is raised.
    """
    for attempt in range(attempts):
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            message = str(exc).lower()
            if attempt == attempts - 1 or ("locked" not in message and "busy" not in message):
                raise
            log.debug("index busy (%s); retrying", exc)
            time.sleep(delay * 2**attempt)
    raise AssertionError("unreachable")  # pragma: no cover


def is_indexable_change(workspace: Workspace, path: str, *, is_directory: bool = False) -> bool:
    """Whether a change at ``path`` can change what the index holds.

    Files: MEMORY.md, ``*.md`` under ``memory/`` and ``skills/``, and extra paths — what
    :meth:`Workspace.iter_files` lists (a hidden file too; no folder on the way hidden below the
    indexed place). Folders: ``memory/``, ``skills/`` and anything below them or an extra path
    (a moved or deleted folder takes its notes with it), unless hidden. Never ``.memdir/``.
    """
    candidate = Path(path)
    if not is_directory and not candidate.name.lower().endswith(".md"):
        return False

    def visible(below: tuple[str, ...]) -> bool:
        return not any(p.startswith(".") for p in (below if is_directory else below[:-1]))

    try:
        parts = candidate.relative_to(workspace.root).parts
    except ValueError:
        parts = ()
    if parts and parts[0] != STATE_DIR:
        if parts[0] in (MEMORY_DIR, SKILLS_DIR) and visible(parts[1:]):
            return True
        if parts == (MEMORY_FILE,) and not is_directory:
            return True
    return any(
        is_within(candidate, extra) and visible(candidate.relative_to(extra).parts)
        for extra in workspace.extra_paths
    )


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: WorkspaceWatcher) -> None:
        self._watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in _IGNORED_EVENTS:
            return
        # A folder is "modified" whenever any file in it changes; the file's own event counts.
        if event.is_directory and event.event_type not in ("created", "deleted", "moved"):
            return
        workspace = self._watcher.memory.workspace
        src, dest = (
            raw.decode() if isinstance(raw, bytes) else raw
            for raw in (event.src_path, getattr(event, "dest_path", ""))
        )
        if event.is_directory:
            if event.event_type in ("deleted", "moved"):
                self._watcher.folder_changed(Path(src), gone=True)
            if event.event_type in ("created", "moved"):
                self._watcher.folder_changed(Path(dest or src), gone=False)
        changed = [
            path
            for path in (src, dest)
            if path and is_indexable_change(workspace, path, is_directory=event.is_directory)
        ]
        if changed:
            # A folder created, moved or deleted takes its files with it: look at every file.
            self._watcher.poke(() if event.is_directory else changed, whole=event.is_directory)


class SharedObserver:
    """One watchdog observer for many watchers (the per-user service's workspaces): one
    inotify instance on Linux (watchdog 7 reads every watch of an observer from one) and one
    dispatching thread, where an observer per workspace took one of each (150 workspaces used
    up a user's 128 inotify instances: issue 35). A folder that two watchers watch is
    scheduled once and unscheduled when the last of them lets it go. Started on first use.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._observer: BaseObserver | None = None
        self._users: dict[ObservedWatch, int] = {}

    def schedule(
        self, handler: FileSystemEventHandler, folder: Path, *, recursive: bool
    ) -> ObservedWatch:
        """Watch ``folder`` for ``handler``; the watch, for :meth:`unschedule`.

        Raises:
            OSError: the folder cannot be watched (e.g. the inotify watch limit).
        """
        with self._lock:
            if self._observer is None:
                observer = Observer()
                observer.daemon = True
                observer.start()
                self._observer = observer
            watch = self._observer.schedule(handler, str(folder), recursive=recursive)
            self._users[watch] = self._users.get(watch, 0) + 1
            return watch

    def unschedule(self, handler: FileSystemEventHandler, watch: ObservedWatch) -> None:
        """Stop giving ``handler`` the events of ``watch`` (and stop the watch when no one
        else uses it)."""
        with self._lock:
            left = self._users.get(watch, 0) - 1
            if self._observer is None or left < 0:
                return
            if left:
                self._users[watch] = left
                with contextlib.suppress(KeyError):
                    self._observer.remove_handler_for_watch(handler, watch)
                return
            del self._users[watch]
            with contextlib.suppress(KeyError, OSError):
                self._observer.unschedule(watch)

    @property
    def watches(self) -> int:
        """How many folders are watched."""
        with self._lock:
            return len(self._users)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop every watch and the observer's thread."""
        with self._lock:
            observer, self._observer = self._observer, None
            self._users.clear()
        if observer is not None:
            observer.stop()
            observer.join(timeout)


class WorkspaceWatcher:
    """Watch a workspace's Markdown files and sync the index after they change.

    Args:
        memory: the Memory whose index to keep current.
        debounce: quiet seconds after the last change before syncing.
        max_delay: most seconds between the first change of a burst and its sync.
        lock: held around every sync; share it with other users of ``memory`` on other threads.
        on_sync: called with each sync's report (on the watcher thread).
        on_error: called with the exception of a failed sync; default: logged.
        initial_sync: sync once at start, to catch up with changes made while not watching.
        warm: after each sync, load what the next search would wait for (the vector matrix:
            ~740 MB held at 10,000 files; once, jieba's dictionary when the notes hold Chinese);
            for a process that searches, as the MCP server.
        observer: the :class:`SharedObserver` to watch through (the per-user service shares
            one among its workspaces); default: one of its own, stopped with the watcher.
    """

    def __init__(
        self,
        memory: Memory,
        *,
        debounce: float = DEBOUNCE_S,
        max_delay: float = MAX_DELAY_S,
        lock: threading.Lock | threading.RLock | None = None,
        on_sync: Callable[[SyncReport], None] | None = None,
        on_error: Callable[[Exception], None] | None = None,
        initial_sync: bool = True,
        warm: bool = False,
        observer: SharedObserver | None = None,
    ) -> None:
        self.memory = memory
        self.warm = warm
        self.debounce = debounce
        self.max_delay = max(max_delay, debounce)
        self.lock = lock if lock is not None else threading.Lock()
        self.on_sync = on_sync
        self.on_error = on_error
        self.syncs = 0
        self._initial_sync = initial_sync
        self._cond = threading.Condition()
        self._first_change: float | None = None
        self._last_change = 0.0
        self._stopping = False
        self._shared = observer
        self._observer: SharedObserver | None = None
        self._handler = _Handler(self)
        self._watches: dict[Path, ObservedWatch] = {}
        self._thread: threading.Thread | None = None
        self._syncing = False
        self._blind = False  # a folder could not be watched: changes there may go unseen
        # The files changed since the last sync began (absolute paths), unless a change needs
        # a look at every file (the first sync, a folder event, a failed sync): then _whole.
        self._changed: set[str] = set()
        self._whole = True
        self._in_flight: frozenset[str] | None = frozenset()  # what the running sync looks at
        self._full_at = -float("inf")  # when the last sync that looked at every file began
        self._segmenter_checked = False

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> WorkspaceWatcher:
        """Start watching (idempotent); returns self."""
        if self._thread is not None:
            return self
        self._blind = False  # looked at again below
        self._observer = self._shared if self._shared is not None else SharedObserver()
        root = self.memory.workspace.root
        # The root alone (for MEMORY.md), then the note folders: never .memdir/ or .git/.
        self._schedule(root, recursive=False)
        for folder in self._note_folders():
            self._schedule(folder, recursive=True)
        for extra in self.memory.workspace.extra_paths:
            if any(is_within(extra, folder) for folder in self._note_folders()):
                continue
            if extra.is_dir():
                self._schedule(extra, recursive=True)
            elif extra.parent.is_dir():  # a file, or a folder made later (folder_changed)
                self._schedule(extra.parent, recursive=False)
            else:
                self._blind = True  # nothing to watch: searches look by the other rules
        self._stopping = False
        with self._cond:
            self._whole = True  # nothing was seen while not watching
            if self._initial_sync:
                self._first_change = self._last_change = time.monotonic() - self.max_delay
        self._thread = threading.Thread(target=self._run, name="memdir-watch", daemon=True)
        self._thread.start()
        with self._cond:
            self._cond.notify_all()  # an older loop still waiting sees it is not the one
        # Searches look only at the files this watcher saw change and has not synced yet.
        self.memory.index.freshness.watcher = self.pending
        return self

    def unsynced(self) -> bool:
        """Whether the index may lag behind the files: a burst of changes waiting for its
        sync, a sync running, or a folder that could not be watched."""
        return self._blind or self._syncing or self._first_change is not None or not self.running

    def pending(self) -> frozenset[str] | None:
        """The files (absolute paths) changed but not synced yet, the running sync's included:
        empty when the index is in step; None when every file must be looked at (a folder
        changed, a folder could not be watched, the first sync, a sync failed)."""
        with self._cond:
            if self._blind or not self.running or self._whole or self._in_flight is None:
                return None
            return self._in_flight | self._changed

    def _warm(self) -> None:
        try:
            self.memory.index.warm()
        except Exception as exc:  # a search would meet it again and report it
            log.warning("memdir watch: loading the vectors failed: %s", exc)

    def _note_folders(self) -> tuple[Path, Path]:
        root = self.memory.workspace.root
        return root / MEMORY_DIR, root / SKILLS_DIR

    def _schedule(self, folder: Path, *, recursive: bool) -> None:
        if self._observer is None or folder in self._watches or not folder.is_dir():
            return
        try:
            self._watches[folder] = self._observer.schedule(
                self._handler, folder, recursive=recursive
            )
        except OSError as exc:  # e.g. the inotify watch limit
            self._blind = True
            log.warning("memdir watch: cannot watch %s: %s", folder, exc)

    def folder_changed(self, folder: Path, *, gone: bool) -> None:
        """Start watching ``memory/``, ``skills/`` or an extra folder when it appears; forget it
        when it goes."""
        if folder not in self._note_folders() and folder not in self.memory.workspace.extra_paths:
            return
        if not gone:
            self._schedule(folder, recursive=True)
            return
        watch = self._watches.pop(folder, None)
        if watch is not None and self._observer is not None:
            self._observer.unschedule(self._handler, watch)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop watching and wait for a sync in progress to finish."""
        if self.memory.index.freshness.watcher == self.pending:
            self.memory.index.freshness.watcher = None
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._observer is not None:
            if self._observer is self._shared:
                for watch in self._watches.values():
                    self._observer.unschedule(self._handler, watch)
            else:
                self._observer.stop(timeout)
            self._observer = None
            self._watches.clear()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> WorkspaceWatcher:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- debounce -------------------------------------------------------------------------

    def poke(self, paths: Iterable[str] = (), *, whole: bool = False) -> None:
        """Note a change to the files at ``paths`` (absolute), or one that needs a look at every
        file (``whole``): a sync follows once things are quiet."""
        changed = list(paths)
        with self._cond:
            self._changed.update(changed)
            self._whole = self._whole or whole or not changed
            now = time.monotonic()
            if self._first_change is None:
                self._first_change = now
            self._last_change = now
            self._cond.notify_all()

    def _due_in(self) -> float | None:
        """Seconds until the pending sync is due (≤ 0: now), or None when nothing is pending."""
        if self._first_change is None:
            return None
        quiet_at = self._last_change + self.debounce
        latest = self._first_change + self.max_delay
        return min(quiet_at, latest) - time.monotonic()

    def _run(self) -> None:
        me = threading.current_thread()
        while True:
            with self._cond:
                # A loop whose stop() gave up waiting for its sync ends once a newer one runs.
                while not self._stopping and self._thread is me:
                    due = self._due_in()
                    if due is not None and due <= 0:
                        break
                    self._cond.wait(timeout=due)
                if self._stopping or self._thread is not me:
                    return
                self._syncing = True
                self._first_change = None
                stale = time.monotonic() - self._full_at > FULL_LOOK_EVERY_S
                whole = self._whole or stale or len(self._changed) > MAX_LISTED_CHANGES
                paths = frozenset(self._changed)
                if whole:
                    self._full_at = time.monotonic()
                self._in_flight = None if whole else paths
                self._whole, self._changed = False, set()
            ok = False
            try:
                ok = self._sync(None if whole else paths)
            finally:
                with self._cond:
                    self._syncing = False
                    self._in_flight = frozenset()
                    self._whole = self._whole or not ok  # after a failure: every file

    def _sync(self, paths: frozenset[str] | None) -> bool:
        """One sync (of ``paths`` only, when given); whether it succeeded."""
        try:
            with self.lock:
                report = retry_when_busy(partial(self.memory.sync, paths=paths, bridge=False))
                if self.warm:
                    # The next search would load (or bring in step) the vector matrix: do it
                    # now, while nobody waits (~2 s at 10,000 files on the first sync).
                    self._warm()
        except Exception as exc:
            if self.on_error is not None:
                self.on_error(exc)
            else:
                log.warning("memdir watch: sync failed: %s", exc)
            return False
        self.syncs += 1
        if self.on_sync is not None:
            self.on_sync(report)
        if self.warm and not self._segmenter_checked:  # once, outside the lock: no index use
            self._segmenter_checked = True
            try:
                self.memory.load_segmenter_for_chinese()
            except Exception as exc:  # a Chinese search would meet it again and report it
                log.warning("memdir watch: loading the Chinese segmenter failed: %s", exc)
        return True
