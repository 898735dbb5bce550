"""The connection and the ``meta`` table every part of :class:`~memdir.index.sqlite.store.
SqliteStore` shares: key/value settings, the write generation and the counters kept in step by
every write (so that ``memdir status`` and BM25 never count rows)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Mapping

#: How long a write waits for another process's write (seconds).
BUSY_TIMEOUT_S = 30.0


class SqliteMeta:
    """Meta values and counters (a base of the store's parts; it reads ``conn``)."""

    conn: sqlite3.Connection
    _depth: int = 0

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
        try:
            yield self.conn
            self.conn.execute("COMMIT")
        except BaseException:
            # SQLite may have rolled back already (a full disk, SQLITE_FULL): a second ROLLBACK
            # would replace the real error with "cannot rollback - no transaction is active".
            if self.conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")
            raise
        finally:
            self._depth = 0

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
