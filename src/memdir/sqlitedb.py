"""The SQLite files memdir keeps (the index, the recall store), opened the same way and migrated
by numbered, append-only scripts (``PRAGMA user_version``)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path


def open_wal(
    path: Path,
    *,
    timeout: float,
    migrate: Callable[[sqlite3.Connection], object],
    foreign_keys: bool = False,
) -> sqlite3.Connection:
    """Open (creating if needed) the SQLite file at ``path`` in autocommit and WAL mode (readers
    never wait for the writer), then ``migrate`` it; the connection is closed on any failure.

    Args:
        timeout: the busy timeout in seconds (how long a write waits for another writer).
        migrate: brings the schema up to date (see :func:`apply_migrations`).
        foreign_keys: turn on foreign key enforcement.

    Raises:
        sqlite3.DatabaseError: the file is not a usable SQLite database.
    """
    conn = sqlite3.connect(
        str(path), timeout=timeout, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        if foreign_keys:
            conn.execute("PRAGMA foreign_keys=ON")
        migrate(conn)
    except BaseException:
        conn.close()
        raise
    return conn


#: One numbered migration: SQL statements separated by ``;`` (no triggers), or a function that
#: runs inside the migration's transaction (for data SQL alone cannot convert).
Migration = str | Callable[[sqlite3.Connection], None]


def apply_migrations(
    conn: sqlite3.Connection,
    migrations: Sequence[Migration],
    *,
    newer: Callable[[int, int], Exception],
) -> int:
    """Bring ``PRAGMA user_version`` up to ``len(migrations)``, one transaction per migration.

    Safe when several processes open a new database at once: each migration re-reads the
    version after taking the write lock.

    Args:
        conn: a connection in autocommit mode (``isolation_level=None``).
        migrations: SQL scripts (statements separated by ``;``, no triggers) or functions.
        newer: builds the error raised when the database is newer than ``migrations``.

    Returns:
        The schema version after migrating.
    """
    target = len(migrations)
    version = _user_version(conn)
    if version > target:
        raise newer(version, target)
    while version < target:
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have migrated while we waited for the write lock.
            version = _user_version(conn)
            if version < target:
                migration = migrations[version]
                if callable(migration):
                    migration(conn)
                else:
                    for statement in migration.split(";"):
                        if statement.strip():
                            conn.execute(statement)
                version += 1
                conn.execute(f"PRAGMA user_version = {version}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite may have rolled back already (a full disk)
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            raise
    return target


def _user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])
