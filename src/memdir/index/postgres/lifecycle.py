"""How a workspace's index is kept in PostgreSQL: the
:class:`~memdir.index.base.IndexLifecycle` of :mod:`memdir.index.postgres`."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

from memdir.embeddings.base import Vectors
from memdir.errors import ConfigError, IndexStoreError
from memdir.index.base import IndexBackend, LifecycleOptions
from memdir.index.postgres.schema import (
    DATA_VERSION,
    EXACT_SEARCH_MAX,
    HNSW_MAX_DIMS,
    driver,
    ensure_workspace_index,
    redact_url,
)
from memdir.index.postgres.store import PostgresStore, workspace_lock_key

#: How often a waiting writer retries the advisory lock.
LOCK_POLL_S = 0.05
#: How long the workspace's generation read from the database is reused (a search asks for it
#: four times: counts, corpus statistics, terms): another process's write reaches this
#: process's cached statistics within this time, its rows at once; this process's own writes
#: at once.
GENERATION_REUSE_S = 0.25


class PostgresLifecycle:
    """A workspace's index in PostgreSQL.

    The writer lock is a session-level advisory lock on the workspace (released by the server
    if the process or its host dies); a rebuild replaces the workspace's rows in one
    transaction; a lost connection (server restart, failover) is reopened once per read.
    """

    backend = "postgres"
    vector_backend = "pgvector-hnsw"
    schema_version = DATA_VERSION  # what the identity records (see DATA_VERSION)

    def __init__(self, options: LifecycleOptions) -> None:
        if options.keyword_tokenizer != "memdir":
            raise ConfigError(
                f"index.keyword_tokenizer {options.keyword_tokenizer!r} is an SQLite FTS5 "
                "benchmark mode; the PostgreSQL index supports only 'memdir'"
            )
        driver()  # fail now, with the pip line, when the extra is missing
        self.url = options.url
        self.workspace_id = options.workspace_id
        self.location = f"{redact_url(options.url)} (workspace {options.workspace_id})"
        self.host = f"{socket.gethostname()}:{options.state_dir}"
        self.dims = options.dims
        self.notes = options.notes
        if options.vector_backend != "numpy":
            self.notes.append(
                f"index.vector_backend {options.vector_backend!r} applies to SQLite only; "
                "PostgreSQL searches vectors with pgvector"
            )
        self._store: PostgresStore | None = None
        self._lock_depth = 0
        #: (generation, when read, the store's commits then).
        self._generation: tuple[int, float, int] | None = None

    def store(self) -> PostgresStore:
        """The open store; a connection found lost by an earlier statement is reopened."""
        if self._store is not None and (self._store.conn.closed or self._store.conn.broken):
            self.close()
        if self._store is None:
            self._store = PostgresStore.open(self.url, self.workspace_id, self.host)
            if self.dims > HNSW_MAX_DIMS:
                self.notes.append(
                    f"{self.dims}-dimensional vectors are beyond pgvector's HNSW limit "
                    f"({HNSW_MAX_DIMS}): vector search is exact"
                )
        return self._store

    @contextlib.contextmanager
    def write_lock(self, timeout: float = 60.0) -> Iterator[None]:
        """The workspace's advisory lock, held by this process's connection (re-entrant)."""
        store = self.store()
        key = workspace_lock_key(self.workspace_id)
        if self._lock_depth == 0:
            deadline = time.monotonic() + timeout
            while not store.conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
                if time.monotonic() >= deadline:
                    raise IndexStoreError(
                        f"another memdir process has been writing workspace {self.workspace_id} "
                        f"for {timeout:.0f} s; try again when it finishes"
                    )
                time.sleep(LOCK_POLL_S)
        self._lock_depth += 1
        try:
            yield
        finally:
            self._lock_depth -= 1
            if self._lock_depth == 0:
                with contextlib.suppress(Exception):  # a lost connection released it already
                    store.conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
                self._index_if_large(store)

    def _index_if_large(self, store: PostgresStore) -> None:
        """After a write phase that stored vectors: give the workspace its own HNSW index once
        it holds more than :data:`EXACT_SEARCH_MAX` of them (built by this writer, outside the
        writer lock, without blocking other writers; docs/design.md#vector-search)."""
        if not store.vectors_added or not 0 < self.dims <= HNSW_MAX_DIMS:
            return
        store.vectors_added = False
        if store.conn.closed or store.conn.broken:
            return
        own = store.hnsw_index(self.dims, fresh=True)
        if own is not None and own != f"memdir_vectors_hnsw_{self.dims}":
            return
        if store.vector_count(self.dims, EXACT_SEARCH_MAX + 1) > EXACT_SEARCH_MAX:
            ensure_workspace_index(store.conn, self.workspace_id, self.dims)
            store.hnsw_index(self.dims, fresh=True)

    def rebuild(self, fill: Callable[[IndexBackend], None]) -> None:
        """Clear the workspace's rows and ``fill`` them again, all in one transaction."""
        store = self.store()
        with store.write():
            store.clear()
            fill(store)

    def read(self, fn: Callable[[IndexBackend], Any], resync: Callable[[], object]) -> Any:
        """Run a read; reconnect once if the connection was lost (the index itself is never
        damaged by that, so ``resync`` is not needed)."""
        psycopg, _ = driver()
        try:
            return fn(self.store())
        except psycopg.OperationalError:
            if self._lock_depth:
                raise
            self.close()
            return fn(self.store())

    def recover(self, exc: BaseException) -> bool:
        """A server database repairs itself or is repaired by its operator: never here."""
        return False

    def vector_search(self, query: Vectors, k: int) -> list[tuple[int, float]]:
        return self.store().nearest(query, k)

    def warm(self) -> None:
        """Nothing to load: PostgreSQL keeps its own vector index."""

    def cache_key(self) -> object:
        store = self.store()
        memo, now = self._generation, time.monotonic()
        if memo is not None and now - memo[1] < GENERATION_REUSE_S and memo[2] == store.commits:
            return memo[0]
        generation = int(self.read(lambda s: s.generation(), lambda: None))
        self._generation = (generation, now, self.store().commits)
        return generation

    def close(self) -> None:
        if self._store is not None:
            with contextlib.suppress(Exception):
                self._store.close()
            self._store = None
