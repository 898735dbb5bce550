"""How a workspace's SQLite index is kept: the :class:`~memdir.index.base.IndexLifecycle` of
:mod:`memdir.index.sqlite`.

- Location: ``<workspace>/.memdir/index.sqlite``; when the workspace cannot be written, a cache
  under ``$MEMDIR_HOME/indexes/`` so a read-only workspace can still be searched (the manager
  picks the folder: :func:`memdir.index.location.default_index_dir`).
- One writer: a cross-process file lock (``index.lock``) around every write phase; readers never
  take it (WAL).
- Identity (provider, model, dims, chunking, tokenizer, schema) change → a full rebuild into a
  temporary database seeded with the old embedding cache (vector ids kept), copied over the live
  one by SQLite's backup API in one transaction; a failure keeps the old index. Other processes
  see an ordinary commit (a new generation); a damaged file moved aside is a new inode, which
  they notice and reopen.
- A damaged database is moved aside (``index.sqlite.corrupt-<time>``) and rebuilt: a file
  that is not a SQLite database, or damage inside the file when a query fails with
  "malformed"/"corrupt" and ``PRAGMA quick_check`` confirms it. The embedding cache is salvaged
  first, range by range, so the rebuild re-embeds only what was lost; copies are kept a week,
  then the newest :data:`KEEP_CORRUPT`. A file that cannot be opened for another reason is
  kept and the error raised; a full disk (:func:`disk_full`) is :class:`DiskFull`, never
  damage (it used to move a healthy index aside, and the rotation then deleted it with its
  embedding cache).
- At start-up, ``index.sqlite.rebuild-<pid>`` files of rebuilds whose process is gone (or older
  than :data:`STALE_REBUILD_S`) are removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from memdir.config.settings import memdir_home
from memdir.embeddings.base import Vectors
from memdir.errors import DiskFull, IndexStoreError
from memdir.index.base import IndexBackend, LifecycleOptions
from memdir.index.sqlite.ann import AnnVectorSearch
from memdir.index.sqlite.salvage import read_cache, salvage_cache, write_cache
from memdir.index.sqlite.schema import DATA_VERSION
from memdir.index.sqlite.store import SqliteStore
from memdir.index.sqlite.vectors import SqliteVectorSearch, create_vector_search
from memdir.workspace.fileio import DISK_FULL, pid_alive

#: The index file's name in the state folder.
INDEX_NAME = "index.sqlite"
#: How many ``index.sqlite.corrupt-*`` copies are kept (newest first).
KEEP_CORRUPT = 2
#: A rebuild file older than this is stale even when its pid is alive (another machine's pid).
STALE_REBUILD_S = 24 * 3600.0
#: Words of SQLite's errors for a damaged file (SQLITE_CORRUPT, SQLITE_NOTADB).
_DAMAGE_WORDS = ("malformed", "corrupt", "not a database")
_REBUILD_RE = re.compile(rf"^{re.escape(INDEX_NAME)}\.rebuild-(\d+)(?:-wal|-shm|-journal)?$")


class SqliteLifecycle:
    """The SQLite file's life (see the module docstring); implements
    :class:`~memdir.index.base.IndexLifecycle`."""

    backend = "sqlite"
    schema_version = DATA_VERSION  # what the identity records (see DATA_VERSION)

    def __init__(self, options: LifecycleOptions) -> None:
        self.notes = options.notes
        if options.state_note:
            self.notes.append(options.state_note)
        folder = _writable_folder(options.state_dir, self.notes)
        self.path = folder / INDEX_NAME
        self.location = str(self.path)
        self.vector_backend = options.vector_backend
        if options.vector_backend == "sqlite-vec":
            self.notes.append(
                "vector_backend = sqlite-vec is no longer used: vectors are searched exactly "
                "with numpy over the stored vectors (docs/design.md#vector-search)"
            )
        self._space = options.embedding
        self._approximate_over = options.approximate_over
        self._lock = FileLock(str(folder / "index.lock"))
        self._store: SqliteStore | None = None
        self._inode: int | None = None
        self._vectors: SqliteVectorSearch | None = None
        removed = clean_stale_rebuilds(folder)
        if removed:
            self.notes.append(f"removed {len(removed)} file(s) of interrupted index rebuilds")

    def _open(self, path: Path) -> SqliteStore:
        return SqliteStore.open(path, space=self._space)

    def store(self) -> SqliteStore:
        """The open store, reopened when another process swapped the file."""
        inode = _inode(self.path)
        if self._store is not None and inode == self._inode:
            return self._store
        self._close_store()
        try:
            store = self._open(self.path)
            store.meta_get("identity")
        except sqlite3.DatabaseError as exc:
            self._raise_if_full(exc)
            with self.write_lock():
                store = self._recover(exc)
        self._store, self._inode = store, _inode(self.path)
        return store

    def _raise_if_full(self, exc: BaseException) -> None:
        """A full disk is not damage: say so, and keep the index as it is.

        Raises:
            DiskFull: ``exc`` comes from a full disk (or quota).
        """
        if disk_full(exc, self.path.parent):
            raise DiskFull(
                f"the disk under {self.path.parent} is full ({exc}): the index is kept as it "
                "is; free some space (files changed since the last sync are not indexed)"
            ) from exc

    def _recover(self, exc: Exception, *, damaged: bool = False) -> SqliteStore:
        """Move a damaged database aside and start a new one that keeps what could be read of
        its embedding cache (call under the lock). Only damage moves a file: the error names
        it and the file's own check confirms it, or the file is not a SQLite database at all;
        a file that cannot be opened for another reason (a full disk, permissions) is kept and
        the error raised."""
        try:  # another process may have recovered it while we waited for the lock
            store = self._open(self.path)
            store.meta_get("identity")
            if not (damaged or is_damage(exc)) or _quick_check(store) == "ok":
                return store
            store.close()
        except sqlite3.DatabaseError as again:
            self._raise_if_full(again)
            if not (damaged or is_damage(exc) or is_damage(again) or not _has_header(self.path)):
                raise IndexStoreError(f"cannot open the index {self.path}: {again}") from again
        salvaged = salvage_cache(self.path)
        aside = self.path.with_name(f"{INDEX_NAME}.corrupt-{int(time.time())}")
        with contextlib.suppress(FileNotFoundError):
            os.replace(self.path, aside)
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(str(self.path) + suffix)
        _drop_old_copies(self.path.parent)
        try:
            store = self._open(self.path)
            if salvaged:
                with store.write() as conn:
                    write_cache(conn, salvaged)
        except sqlite3.DatabaseError as again:
            raise IndexStoreError(f"cannot create an index at {self.path}: {again}") from again
        self.notes.append(
            f"index was damaged ({exc}); moved to {aside.name} and rebuilt from the files, "
            f"keeping {len(salvaged)} cached embeddings (`memdir index --force` rebuilds it "
            "by hand)"
        )
        return store

    def recover(self, exc: BaseException) -> bool:
        """After a failed write: when the file turns out damaged, move it aside and start a
        fresh index (the caller then syncs again). False when ``exc`` is not damage."""
        if not isinstance(exc, sqlite3.DatabaseError):
            return False
        self._raise_if_full(exc)
        # An error that does not name damage may still come from it (a damaged page under an
        # FTS5 table says "vtable constructor failed"): the file's own check decides.
        busy = any(w in str(exc).lower() for w in ("locked", "busy"))
        damaged = is_damage(exc) or (not busy and self._check_fails())
        if not damaged:
            return False
        self._close_store()
        with self.write_lock():
            self._store = self._recover(exc, damaged=True)
            self._inode = _inode(self.path)
        return True

    def _check_fails(self) -> bool:
        try:
            return _quick_check(self.store()) != "ok"
        except sqlite3.DatabaseError:
            return True

    def vectors(self) -> SqliteVectorSearch:
        if self._vectors is None:
            create_vector_search(self.vector_backend, self.path)  # checks the name
            self._vectors = AnnVectorSearch(self.path, self.notes, over=self._approximate_over)
        return self._vectors

    def vector_search(self, query: Vectors, k: int) -> list[tuple[int, float]]:
        return self.vectors().search(self.store(), query, k)

    def warm(self) -> None:
        if self.store().bound_model() is not None:
            self.vectors().warm(self.store())

    @contextlib.contextmanager
    def write_lock(self, timeout: float = 60.0) -> Iterator[None]:
        """The cross-process writer lock."""
        try:
            with self._lock.acquire(timeout=timeout):
                yield
        except Timeout as exc:
            raise IndexStoreError(
                f"another memdir process has been writing the index for {timeout:.0f} s; "
                "try again when it finishes"
            ) from exc

    def rebuild(self, fill: Callable[[IndexBackend], None]) -> None:
        """Build a fresh index in a temporary file, seeded from the old cache, and publish it
        (call under the write lock; see :meth:`_publish`)."""
        old = self.store()
        tmp = self.path.with_name(f"{INDEX_NAME}.rebuild-{os.getpid()}")
        _remove_db(tmp)
        try:
            fresh = self._open(tmp)
            try:
                _copy_cache(old, fresh)
                fill(fresh)
                with fresh.write():
                    fresh.meta_set("generation", str(old.generation() + 1))
                fresh.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                self._publish(fresh, old)
            finally:
                fresh.close()
        finally:
            _remove_db(tmp)
        self._close_store()
        self.store()

    def _publish(self, fresh: SqliteStore, live: SqliteStore) -> None:
        """Copy ``fresh`` over the live database with SQLite's backup API: one write
        transaction that every other connection sees as an ordinary commit (readers keep their
        snapshot until they end it). Renaming the file over the live one, as rebuilds once
        did, is what SQLite's "How To Corrupt An SQLite Database File" (§2.4, unlinking or
        renaming a database file while in use) warns of: the ``-wal`` and ``-shm`` files go
        by name, so a process still holding the old file could delete or reuse the new one's
        log, and two processes then wrote the same file through two logs (a race test of
        searchers syncing while one rebuilt counted every file twice, 1 run in ~40)."""
        try:
            fresh.conn.backup(live.conn)
        except sqlite3.DatabaseError as exc:
            self._raise_if_full(exc)
            raise
        with contextlib.suppress(sqlite3.Error):  # give the log's space back where it can
            live.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def read(self, fn: Callable[[IndexBackend], Any], resync: Callable[[], object]) -> Any:
        """Run a read; if the database turns out to be corrupt, recover, resync, retry once."""
        try:
            return fn(self.store())
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "fts5" in str(exc).lower():
                raise
            self._raise_if_full(exc)
            self._close_store()
            with self.write_lock():
                self._store = self._recover(exc)
                self._inode = _inode(self.path)
            resync()
            return fn(self.store())

    def cache_key(self) -> object:
        store = self.store()
        return (self._inode, store.generation())

    def close(self) -> None:
        self._close_store()

    def _close_store(self) -> None:
        if self._store is not None:
            with contextlib.suppress(sqlite3.Error):
                self._store.close()
            self._store = None
            self._inode = None
        if self._vectors is not None:
            self._vectors.close()
            self._vectors = None


def _writable_folder(state_dir: Path, notes: list[str]) -> Path:
    """``state_dir``, or a folder under ``$MEMDIR_HOME/indexes/`` when the index file there
    cannot be written (as for a read-only workspace: searches still work, from a copy)."""
    index = state_dir / INDEX_NAME
    if not index.exists() or os.access(index, os.W_OK):
        return state_dir
    digest = hashlib.sha256(str(index).encode()).hexdigest()[:16]
    fallback = memdir_home() / "indexes" / digest
    fallback.mkdir(parents=True, exist_ok=True)
    notes.append(f"{index} is read-only: the index is kept in {fallback} instead")
    return fallback


#: SQLite's result codes for a full disk and an I/O error (which ENOSPC becomes when a WAL or
#: shared-memory file cannot grow).
_SQLITE_FULL, _SQLITE_IOERR = 13, 10
#: Below this many free bytes an I/O error of the index is taken for a full disk.
FULL_BELOW_BYTES = 1 << 20


def disk_full(exc: BaseException, folder: Path) -> bool:
    """Whether ``exc`` comes from a full disk or quota under ``folder``: SQLite says so
    (SQLITE_FULL), or the OS does (ENOSPC, EDQUOT), or an I/O error while the folder has
    almost no free space left."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF == _SQLITE_FULL:
        return True
    if isinstance(exc, OSError) and exc.errno in DISK_FULL:
        return True
    message = str(exc).lower()
    if "disk is full" in message or "no space left" in message:
        return True
    io_error = (code is not None and code & 0xFF == _SQLITE_IOERR) or "disk i/o error" in message
    if io_error or "unable to open database file" in message:
        try:
            st = os.statvfs(folder)
        except OSError:
            return False
        return st.f_bavail * st.f_frsize < FULL_BELOW_BYTES
    return False


def _has_header(path: Path) -> bool:
    """Whether ``path`` starts like a SQLite database (absent counts as not)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def is_damage(exc: BaseException) -> bool:
    """Whether a SQLite error says the file is damaged (not busy, not a bad query)."""
    message = str(exc).lower()
    return isinstance(exc, sqlite3.DatabaseError) and any(w in message for w in _DAMAGE_WORDS)


def _quick_check(store: SqliteStore) -> str:
    try:
        rows = store.conn.execute("PRAGMA quick_check(1)").fetchall()
    except sqlite3.DatabaseError as exc:
        return str(exc)
    return str(rows[0][0]) if rows else "no answer"


def clean_stale_rebuilds(folder: Path) -> list[str]:
    """Remove ``index.sqlite.rebuild-<pid>`` files whose process is gone or that are older
    than :data:`STALE_REBUILD_S`; returns their names."""
    removed: list[str] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = _REBUILD_RE.match(entry.name)
        if match is None or int(match.group(1)) == os.getpid():
            continue
        try:
            old = time.time() - entry.stat(follow_symlinks=False).st_mtime > STALE_REBUILD_S
            if old or not pid_alive(int(match.group(1))):
                os.unlink(entry.path)
                removed.append(entry.name)
        except OSError:
            continue
    return removed


#: A damaged copy younger than this is never removed (it may hold the only copy of
#: embeddings the salvage could not read).
KEEP_CORRUPT_S = 7 * 86400.0


def _drop_old_copies(folder: Path) -> None:
    cutoff = time.time() - KEEP_CORRUPT_S
    copies = sorted(folder.glob(f"{INDEX_NAME}.corrupt-*"), key=lambda p: p.name, reverse=True)
    copies = [c for c in copies if _older_than(c, cutoff)]
    for old in copies[KEEP_CORRUPT:]:
        with contextlib.suppress(OSError):
            old.unlink()


def _older_than(path: Path, cutoff: float) -> bool:
    try:
        return path.stat().st_mtime < cutoff
    except OSError:
        return False


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return None


def _remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(str(path) + suffix)


def _copy_cache(old: SqliteStore, fresh: SqliteStore) -> None:
    """Seed the new database's embedding cache from the old one (best effort)."""
    try:
        rows = read_cache(old.conn)
    except sqlite3.DatabaseError:
        rows = salvage_cache(old.path)  # a damaged file: what can still be read
    with fresh.write() as conn:
        write_cache(conn, rows)
