"""The warm workspaces of the service: per workspace folder and scope, one open
:class:`~memdir.memory.facade.Memory` with its lock, tools, file watcher and background embedding,
opened on first use and closed after ``[service] idle_minutes`` without a request; at most
``[service] max_workspaces`` of them at once (asking for one more closes the least recently
used one that no call holds), all watched through one
:class:`~memdir.watch.SharedObserver` (one inotify instance, not one per workspace).

Every request that uses a workspace borrows it (:meth:`Pool.lend`) under its lock, the lock the
watcher and the MCP tools share, so one workspace serves one call at a time and two
workspaces never share anything (each has its own Memory, index connection, scope and
private files). A call that went past its time limit and goes on in the background keeps the
Memory it had; the next request gets a fresh one (:meth:`WarmWorkspace.start_over`), as the
stdio MCP server does. A change to a config file it was opened with reopens the workspace, so
the service answers as a new process would.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memdir.config.settings import memdir_home
from memdir.deadline import abandoned_calls
from memdir.errors import MemdirError
from memdir.mcp.server import CALL_TIMEOUT_S, MemoryTools
from memdir.memory.facade import Memory
from memdir.watch import SharedObserver, WorkspaceWatcher
from memdir.workspace.layout import STATE_DIR

log = logging.getLogger("memdir.service")

Key = tuple[Path, str]


class NotServed(MemdirError):
    """The service does not serve this workspace (it is not a folder): the client runs the
    command itself, which says why."""


class PoolFull(NotServed):
    """Every workspace slot is held by a call in progress: nothing can be closed to open
    another (the client runs the command itself; an MCP client is told to try again)."""


def config_files(root: Path) -> tuple[Path, Path]:
    """The config files a workspace's settings come from (see
    :func:`memdir.config.settings.load_config`)."""
    return memdir_home() / "config.toml", root / STATE_DIR / "config.toml"


def _stamp(paths: tuple[Path, ...]) -> tuple[tuple[float, int] | None, ...]:
    stamps: list[tuple[float, int] | None] = []
    for path in paths:
        try:
            info = path.stat()
        except OSError:
            stamps.append(None)
        else:
            stamps.append((info.st_mtime, info.st_size))
    return tuple(stamps)


@dataclass
class WarmWorkspace:
    """One served workspace: its Memory, lock, tools and watcher."""

    root: Path
    scope: str
    tools: MemoryTools
    watcher: WorkspaceWatcher | None
    stamp: tuple[tuple[float, int] | None, ...]
    last_used: float = field(default_factory=time.monotonic)
    #: The MCP endpoint's session manager, made by the app on the first MCP request.
    mcp: tuple[Any, Any] | None = None
    closed: bool = False

    @property
    def memory(self) -> Memory:
        return self.tools.memory

    @property
    def lock(self) -> threading.Lock:
        return self.tools.lock

    #: Watches through the pool's observer (None: one of its own).
    observer: SharedObserver | None = None

    @classmethod
    def open(
        cls, root: Path, scope: str, *, watch: bool = True, observer: SharedObserver | None = None
    ) -> WarmWorkspace:
        stamp = _stamp(config_files(root))
        memory = Memory(root, scope=scope)
        tools = MemoryTools(memory, lock=threading.Lock())
        warm = cls(root, scope, tools, None, stamp, observer=observer)
        tools.on_start_over = warm.watch_again
        memory.start_background_embedding()
        if watch:
            warm.watcher = warm._watch()
        return warm

    def _watch(self) -> WorkspaceWatcher | None:
        watcher = WorkspaceWatcher(
            self.memory,
            lock=self.lock,
            on_error=_sync_failed,
            warm=True,
            observer=self.observer,
        )
        try:
            return watcher.start()
        except Exception as exc:  # no watcher: searches still sync first
            log.warning("memdir service: cannot watch %s: %s", self.root, exc)
            return None

    def stale(self) -> bool:
        """Whether a config file it was opened with changed since."""
        return _stamp(config_files(self.root)) != self.stamp

    def start_over(self, why: str) -> None:
        """Go on with a fresh Memory and lock (an abandoned call keeps the old ones)."""
        self.tools.start_over(why)  # calls watch_again

    def watch_again(self) -> None:
        """After a start-over (here or in an MCP call): the watcher follows the new Memory."""
        if self.watcher is not None:
            self.watcher.stop(timeout=1.0)
            self.watcher = self._watch()

    def close(self) -> None:
        """Stop watching, then close the Memory once no call holds it. The watcher stops
        first, without the lock: a sync it runs holds the lock and is waited for."""
        self.closed = True  # a lender that gets the lock next asks the pool again
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher = None
        with self.lock:
            self.memory.close()


class Pool:
    """The workspaces the service keeps warm.

    Args:
        idle_s: seconds without a request after which a workspace is closed.
        watch: watch each workspace's files (off in some tests).
        max_open: the most workspaces open at once (``[service] max_workspaces``).
    """

    def __init__(self, *, idle_s: float = 1800.0, watch: bool = True, max_open: int = 16) -> None:
        self.idle_s = idle_s
        self.watch = watch
        self.max_open = max_open
        #: The one observer every workspace is watched through.
        self.observer = SharedObserver()
        self._entries: dict[Key, WarmWorkspace] = {}
        self._opening: dict[Key, threading.Lock] = {}
        self._guard = threading.Lock()
        self._closed: list[WarmWorkspace] = []
        self._last_close = time.monotonic()
        self._reserved = 0  # slots taken by workspaces being opened

    def served(self) -> list[WarmWorkspace]:
        with self._guard:
            return list(self._entries.values())

    def get(self, root: Path, scope: str = "private") -> WarmWorkspace:
        """The warm workspace of ``root`` in ``scope``, opened if it is not yet.

        Raises:
            NotServed: ``root`` is not an absolute path to a folder.
            MemdirError: it cannot be opened (what :class:`Memory` raised).
        """
        if not root.is_absolute() or not root.is_dir():
            raise NotServed(f"{root} is not a workspace folder the service can open")
        key = (root.resolve(), scope)
        with self._guard:
            opening = self._opening.setdefault(key, threading.Lock())
        with opening:  # one opening per workspace; others wait for it, not for each other
            with self._guard:
                warm = self._entries.get(key)
            if warm is not None and warm.stale():
                self._retire(key, warm, "its config changed")
                warm = None
        if warm is None:
            # A slot first, holding no lock of this workspace: closing another one waits for
            # the call that holds it, and that call may be waiting for this workspace.
            self._reserve()
            try:
                with opening:
                    with self._guard:
                        warm = self._entries.get(key)
                    if warm is None:
                        warm = WarmWorkspace.open(
                            key[0], scope, watch=self.watch, observer=self.observer
                        )
                        with self._guard:
                            self._entries[key] = warm
                        log.info("memdir service: opened %s (%s)", key[0], scope)
            finally:
                with self._guard:
                    self._reserved -= 1
        warm.last_used = time.monotonic()
        return warm

    def _reserve(self) -> None:
        """Take a slot for a workspace about to be opened, closing the least recently used
        workspaces that no call holds until one is free.

        Raises:
            PoolFull: every open workspace is held by a call.
        """
        while True:
            with self._guard:
                if len(self._entries) + self._reserved < self.max_open:
                    self._reserved += 1
                    return
                oldest = sorted(self._entries.items(), key=lambda item: item[1].last_used)
            for key, warm in oldest:
                if warm.lock.acquire(timeout=0):  # not in use: it may go
                    warm.lock.release()
                    self._drop(key, warm, f"the least recently used of {self.max_open}")
                    break
            else:
                raise PoolFull(
                    f"the service has {self.max_open} workspaces open, all in use "
                    "([service] max_workspaces); try again in a moment"
                )

    @contextlib.contextmanager
    def lend(
        self, root: Path, scope: str = "private", *, timeout: float = CALL_TIMEOUT_S
    ) -> Iterator[Memory]:
        """The warm Memory of ``root``, under its lock, for one call.

        Raises:
            MemdirError: another call held the workspace for ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while True:
            warm = self.get(root, scope)
            lock = warm.lock
            if not lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
                raise MemdirError(
                    f"memory is busy with another call (waited {timeout:.0f} s); try again"
                )
            if warm.lock is lock and not warm.closed:  # not replaced or closed meanwhile
                break
            lock.release()
        memory = warm.memory
        abandoned: list[threading.Thread] = []
        try:
            with abandoned_calls() as abandoned:
                yield memory
        finally:
            if any(thread.is_alive() for thread in abandoned):
                warm.start_over(abandoned[0].name)  # before the lock is free: no one waits on it
            lock.release()
            warm.last_used = time.monotonic()

    def close_idle(self, now: float | None = None) -> list[WarmWorkspace]:
        """Close the workspaces idle for ``idle_s``; those closed since the last call (idle,
        or reopened after a config change)."""
        at = time.monotonic() if now is None else now
        with self._guard:
            idle = [(k, w) for k, w in self._entries.items() if at - w.last_used >= self.idle_s]
        for key, warm in idle:
            if warm.lock.acquire(timeout=0):  # in use: next time
                warm.lock.release()
                self._drop(key, warm, "idle")
        return self.take_closed()

    def take_closed(self) -> list[WarmWorkspace]:
        """The workspaces closed since the last call (idle, the least recently used, or
        reopened after a config change), for what the app keeps beside them (MCP servers)."""
        with self._guard:
            closed, self._closed = self._closed, []
        return closed

    def idle_for(self, now: float | None = None) -> float:
        """Seconds since the last request to any workspace (0 while one is served)."""
        at = time.monotonic() if now is None else now
        with self._guard:
            if self._entries:
                return 0.0
            return at - self._last_close

    def _retire(self, key: Key, warm: WarmWorkspace, why: str) -> None:
        """Take ``warm`` out at once and close it when the call that holds it is done (on a
        thread of its own: the request that found it stale does not wait)."""
        with self._guard:
            if self._entries.get(key) is warm:
                del self._entries[key]
        closer = threading.Thread(
            target=self._drop, args=(key, warm, why), name="memdir retire", daemon=True
        )
        closer.start()

    def _drop(self, key: Key, warm: WarmWorkspace, why: str) -> None:
        with self._guard:
            if self._entries.get(key) is warm:
                del self._entries[key]
            self._closed.append(warm)
            self._last_close = time.monotonic()
        warm.close()
        log.info("memdir service: closed %s (%s): %s", key[0], key[1], why)

    def close(self) -> None:
        with self._guard:
            entries = list(self._entries.items())
        for key, warm in entries:
            self._drop(key, warm, "the service stops")
        self.observer.stop()


def _sync_failed(exc: Exception) -> None:
    log.warning("memdir service: background index sync failed (searches still sync): %s", exc)
