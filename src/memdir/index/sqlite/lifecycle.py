"""How a workspace's SQLite index is kept: the :class:`~memdir.index.base.IndexLifecycle` of
:mod:`memdir.index.sqlite`.

- Location: ``<workspace>/.memdir/index.sqlite``; when the workspace cannot be written, a cache
  under ``$MEMDIR_HOME/indexes/`` so a read-only workspace can still be searched (the manager
  picks the folder: :func:`memdir.index.manager.default_index_dir`).
- One writer: a cross-process file lock (``index.lock``) around every write phase; readers never
  take it (WAL).
- Identity (provider, model, dims, chunking, tokenizer, schema) change → a full rebuild into a
  temporary database seeded with the old embedding cache, swapped in with one rename; a failure
  keeps the old index. Other processes notice the swap (inode change) and reopen.
- A database that cannot be read is moved aside (``index.sqlite.corrupt-<time>``) and rebuilt.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from memdir.embeddings.base import Vectors
from memdir.errors import IndexStoreError
from memdir.index.base import IndexBackend, LifecycleOptions
from memdir.index.sqlite.schema import SCHEMA_VERSION
from memdir.index.sqlite.store import SqliteStore
from memdir.index.sqlite.vectors import SqliteVectorSearch, create_vector_search

#: The index file's name in the state folder.
INDEX_NAME = "index.sqlite"


class SqliteLifecycle:
    """The SQLite file's life (see the module docstring); implements
    :class:`~memdir.index.base.IndexLifecycle`."""

    backend = "sqlite"
    schema_version = SCHEMA_VERSION

    def __init__(self, options: LifecycleOptions) -> None:
        self.path = options.state_dir / INDEX_NAME
        self.location = str(self.path)
        self.vector_backend = options.vector_backend
        self.notes = options.notes
        if options.state_note:
            self.notes.append(options.state_note)
        self._lock = FileLock(str(options.state_dir / "index.lock"))
        self._store: SqliteStore | None = None
        self._inode: int | None = None
        self._vectors: SqliteVectorSearch | None = None

    def store(self) -> SqliteStore:
        """The open store, reopened when another process swapped the file."""
        inode = _inode(self.path)
        if self._store is not None and inode == self._inode:
            return self._store
        self._close_store()
        try:
            store = SqliteStore.open(self.path)
            store.meta_get("identity")
        except sqlite3.DatabaseError as exc:
            with self.write_lock():
                store = self._recover(exc)
        self._store, self._inode = store, _inode(self.path)
        return store

    def _recover(self, exc: Exception) -> SqliteStore:
        """Move an unreadable database aside and start a new one (call under the lock)."""
        try:  # another process may have recovered it while we waited for the lock
            store = SqliteStore.open(self.path)
            store.meta_get("identity")
            return store
        except sqlite3.DatabaseError:
            pass
        aside = self.path.with_name(f"{INDEX_NAME}.corrupt-{int(time.time())}")
        with contextlib.suppress(FileNotFoundError):
            os.replace(self.path, aside)
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(str(self.path) + suffix)
        self.notes.append(f"index was unreadable ({exc}); moved to {aside.name} and rebuilt")
        try:
            return SqliteStore.open(self.path)
        except sqlite3.DatabaseError as again:
            raise IndexStoreError(f"cannot create an index at {self.path}: {again}") from again

    def vectors(self) -> SqliteVectorSearch:
        if self._vectors is None:
            self._vectors = create_vector_search(self.vector_backend, self.path)
        return self._vectors

    def vector_search(self, query: Vectors, k: int) -> list[tuple[int, float]]:
        return self.vectors().search(self.store(), query, k)

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
        """Build a fresh index in a temporary file, seeded from the old cache; swap it in."""
        old = self.store()
        tmp = self.path.with_name(f"{INDEX_NAME}.rebuild-{os.getpid()}")
        _remove_db(tmp)
        try:
            fresh = SqliteStore.open(tmp)
            try:
                _copy_cache(old, fresh)
                fill(fresh)
                with fresh.write():
                    fresh.meta_set("generation", str(old.generation() + 1))
            finally:
                fresh.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                fresh.close()
        except BaseException:
            _remove_db(tmp)
            raise
        self._close_store()
        os.replace(tmp, self.path)
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(str(self.path) + suffix)
        self.store()

    def read(self, fn: Callable[[IndexBackend], Any], resync: Callable[[], object]) -> Any:
        """Run a read; if the database turns out to be corrupt, recover, resync, retry once."""
        try:
            return fn(self.store())
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "fts5" in str(exc).lower():
                raise
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
        rows = old.conn.execute(
            "SELECT provider, model, provider_key, hash, dims, embedding, created_at "
            "FROM embedding_cache"
        ).fetchall()
    except sqlite3.DatabaseError:
        return
    with fresh.write() as conn:
        conn.executemany("INSERT OR IGNORE INTO embedding_cache VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
