"""The connection and the ``meta`` table every part of :class:`~memdir.index.sqlite.store.
SqliteStore` shares: key/value settings, the write generation and the counters kept in step by
every write (so that ``memdir status`` and BM25 never count rows)."""

from __future__ import annotations

import collections
import contextlib
import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

#: How long a write waits for another process's write (seconds).
BUSY_TIMEOUT_S = 30.0


#: Write transactions whose vector changes a store remembers (:attr:`SqliteMeta.link_log`).
LINK_LOG = 256


@dataclass(frozen=True)
class LinkChanges:
    """What one committed write transaction of this connection did to the chunks' vectors:
    the generation before and after it, and ``(seq, vector id)`` in order, 0 for a chunk that
    was deleted. A reader in the same process that was in step at ``before`` is in step at
    ``after`` once it applies them, without reading every chunk's link again (the approximate
    vector index: :mod:`memdir.index.sqlite.ann`)."""

    before: int
    after: int
    links: tuple[tuple[int, int], ...]


class SqliteMeta:
    """Meta values and counters (a base of the store's parts; it reads ``conn``)."""

    conn: sqlite3.Connection
    _depth: int = 0
    #: The vector changes of the open write transaction.
    _links: list[tuple[int, int]]
    #: The last :data:`LINK_LOG` write transactions of this connection (another connection's
    #: writes, of this process or another, leave a gap in the generations: a reader then
    #: compares every link).
    link_log: collections.deque[LinkChanges]

    def _link(self, seq: int, vector: int) -> None:
        """Note that chunk ``seq`` now points at ``vector`` (0: the chunk was deleted)."""
        if self._depth:
            self._links.append((seq, vector))

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction: ``BEGIN IMMEDIATE`` … ``COMMIT`` (rolled back on error); a
        nested call joins the outer transaction."""
        if self._depth:
            self._depth += 1
            try:
                yield self.conn
            finally:
                self._depth -= 1
            return
        self.conn.execute("BEGIN IMMEDIATE")
        self._depth = 1
        self._links = []
        try:
            before = self.generation()
            yield self.conn
            after = self.generation()
            self.conn.execute("COMMIT")
            self.link_log.append(LinkChanges(before, after, tuple(self._links)))
        except BaseException:
            # SQLite may have rolled back already (a full disk, SQLITE_FULL): a second ROLLBACK
            # would replace the real error with "cannot rollback - no transaction is active".
            if self.conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")
            raise
        finally:
            self._depth = 0
            self._links = []

    def meta_get(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def meta_set(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def generation(self) -> int:
        """A counter bumped by every write that changes chunks, vectors or the cache."""
        value = self.meta_get("generation")
        return int(value) if value else 0

    def _bump_generation(self) -> None:
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES ('generation', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )

    def counter(self, name: str) -> int:
        """One of :data:`memdir.index.sqlite.schema.COUNTERS`."""
        value = self.meta_get(f"count:{name}")
        return int(value) if value else 0

    def _add_counts(self, deltas: Mapping[str, int]) -> None:
        """Add to the counters (inside the write transaction)."""
        for name, delta in deltas.items():
            if delta:
                self.conn.execute(
                    "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE "
                    "SET value = CAST(value AS INTEGER) + excluded.value",
                    (f"count:{name}", delta),
                )
