"""The SQLite index schema as numbered, append-only migrations (``PRAGMA user_version``).

Never edit a migration that has shipped: add the next one. Tables (docs/design.md#index):

- ``meta``: key/value, holds the index identity and a write generation counter.
- ``files``: one row per indexed file with its hash and the (mtime, size) seen at indexing.
- ``chunks``: line ranges of files with their text; ``seq`` is the rowid shared with the
  FTS5 table and ``vectors``.
- ``chunks_fts``: FTS5 over the *segmented* chunk text (see :mod:`memdir.text`); the tokens are
  already lower-cased and stemmed by memdir, so FTS5 only splits on spaces.
- ``chunks_vocab``: fts5vocab over it, for document frequencies (memdir's own BM25).
- ``vectors``: one float32 blob per chunk that has an embedding.
- ``embedding_cache``: (provider, model, provider_key, text hash) → vector.
"""

from __future__ import annotations

import sqlite3

from memdir.sqlitedb import apply_migrations

MIGRATIONS: tuple[str, ...] = (
    # 1: the initial schema
    """
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    CREATE TABLE files (
        path       TEXT PRIMARY KEY,
        source     TEXT NOT NULL,
        hash       TEXT NOT NULL,
        mtime_ns   INTEGER NOT NULL,
        size       INTEGER NOT NULL,
        indexed_at REAL NOT NULL,
        warning    TEXT
    );
    CREATE TABLE chunks (
        seq        INTEGER PRIMARY KEY,
        id         TEXT NOT NULL UNIQUE,
        path       TEXT NOT NULL,
        source     TEXT NOT NULL,
        start_line INTEGER NOT NULL,
        end_line   INTEGER NOT NULL,
        hash       TEXT NOT NULL,
        model      TEXT NOT NULL,
        text       TEXT NOT NULL,
        embeddable INTEGER NOT NULL DEFAULT 1,
        token_count INTEGER NOT NULL DEFAULT 0,
        updated_at REAL NOT NULL
    );
    CREATE INDEX chunks_by_path ON chunks(path);
    CREATE INDEX chunks_by_hash ON chunks(hash);
    CREATE VIRTUAL TABLE chunks_fts USING fts5(
        tokens,
        tokenize = 'unicode61 remove_diacritics 0'
    );
    CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab(chunks_fts, 'row');
    CREATE TABLE vectors (
        seq       INTEGER PRIMARY KEY REFERENCES chunks(seq) ON DELETE CASCADE,
        embedding BLOB NOT NULL
    );
    CREATE TABLE embedding_cache (
        provider     TEXT NOT NULL,
        model        TEXT NOT NULL,
        provider_key TEXT NOT NULL,
        hash         TEXT NOT NULL,
        dims         INTEGER NOT NULL,
        embedding    BLOB NOT NULL,
        created_at   REAL NOT NULL,
        PRIMARY KEY (provider, model, provider_key, hash)
    );
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: sqlite3.Connection) -> int:
    """Apply the index migrations this database lacks (see :func:`apply_migrations`).

    Raises:
        sqlite3.DatabaseError: the file is newer than this memdir or not a database.
    """
    return apply_migrations(
        conn,
        MIGRATIONS,
        newer=lambda found, known: sqlite3.DatabaseError(
            f"index schema {found} is newer than this memdir ({known})"
        ),
    )
