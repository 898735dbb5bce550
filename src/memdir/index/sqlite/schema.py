"""The SQLite index schema as numbered, append-only migrations (``PRAGMA user_version``).

Never edit a migration that has shipped: add the next one. The tables (docs/design.md#index), as
of migration 2:

- ``meta``: key/value: the index identity, a write generation and the counters ``memdir
  status`` and BM25 read (files, chunks, tokens, vectors, pending, embeddings), kept in step by
  every write so that no search counts rows.
- ``files``: one row per indexed file with its hash, the (mtime, size) seen at indexing and its
  *body*: the lines its chunks cover, raw deflate (:mod:`memdir.index.sqlite.bodies`).
- ``chunks``: line ranges of files (a piece of a long line also has its columns), the sha256 of
  their text, their keyword tokens (raw deflate), their token count and the id of their
  vector. A chunk's text is cut out of its file's body; ``text`` holds it only for a chunk the
  body cannot give back exactly.
- ``chunks_fts``: a contentless FTS5 index over memdir's tokens (already lower-cased, stemmed
  and segmented by :mod:`memdir.text`; FTS5 only splits on spaces); ``chunks_vocab`` its
  fts5vocab table (document frequencies).
- ``embedding_models`` and ``embeddings``: every vector once, keyed by (model, text hash): the
  embedding cache and the index's vectors in one table (:mod:`memdir.index.sqlite.codec`).
- ``companion`` (migration 3): the companion model's code of each chunk text, keyed by (model
  row, text hash) like the cache (:mod:`memdir.index.sqlite.companion`).
"""

from __future__ import annotations

import json
import sqlite3

import numpy as np

from memdir.index.sqlite.codec import encode
from memdir.sqlitedb import Migration, apply_migrations

MIGRATIONS: tuple[Migration, ...] = (
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
    # 2: vectors stored once (issue 17); see _migrate_2.
    lambda conn: _migrate_2(conn),
    # 3: the companion model's codes (issue 34), by model row and text hash, as the embedding
    # cache keeps vectors (memdir.index.sqlite.companion).
    """
    CREATE TABLE companion (
        model INTEGER NOT NULL,
        hash  BLOB NOT NULL,
        code  BLOB NOT NULL,
        PRIMARY KEY (model, hash)
    ) WITHOUT ROWID;
    INSERT OR IGNORE INTO meta(key, value) VALUES ('count:companion', '0');
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)
#: The meaning of the stored rows, part of the index identity (a change rebuilds every index):
#: bumped by a migration that changes what is stored, not by one that only adds a table
#: (migration 3 adds the companion codes, which fill in as chunks are embedded).
DATA_VERSION = 2


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


#: A model's vectors are stored as float16 until it has this many; then their mean becomes its
#: centre (set once, never changed) and later vectors are stored as centred int8.
CENTRE_AFTER = 64

#: Meta keys of the counters every write keeps in step (``memdir status``, BM25's statistics).
COUNTERS = ("files", "chunks", "tokens", "vectors", "pending", "embeddings", "companion")

_V2_TABLES = """
    DROP TABLE vectors;
    DROP TABLE embedding_cache;
    DROP TABLE chunks_vocab;
    DROP TABLE chunks_fts;
    DROP TABLE chunks;
    DROP TABLE files;
    CREATE TABLE embedding_models (
        id           INTEGER PRIMARY KEY,
        provider     TEXT NOT NULL,
        model        TEXT NOT NULL,
        provider_key TEXT NOT NULL,
        dims         INTEGER NOT NULL,
        centre       BLOB,
        UNIQUE (provider, model, provider_key, dims)
    );
    CREATE TABLE embeddings (
        id     INTEGER PRIMARY KEY,
        model  INTEGER NOT NULL,
        hash   BLOB NOT NULL,
        vector BLOB NOT NULL,
        UNIQUE (model, hash)
    );
    CREATE TABLE files (
        id         INTEGER PRIMARY KEY,
        path       TEXT NOT NULL UNIQUE,
        source     TEXT NOT NULL,
        hash       TEXT NOT NULL,
        mtime_ns   INTEGER NOT NULL,
        size       INTEGER NOT NULL,
        indexed_at REAL NOT NULL,
        warning    TEXT,
        body       BLOB
    );
    CREATE TABLE chunks (
        seq         INTEGER PRIMARY KEY,
        file        INTEGER NOT NULL,
        start_line  INTEGER NOT NULL,
        end_line    INTEGER NOT NULL,
        start_col   INTEGER,
        end_col     INTEGER,
        hash        BLOB NOT NULL,
        vector      INTEGER,
        embeddable  INTEGER NOT NULL,
        token_count INTEGER NOT NULL,
        tokens      BLOB NOT NULL,
        text        BLOB
    );
    CREATE INDEX chunks_by_file ON chunks(file);
    CREATE INDEX chunks_pending ON chunks(seq) WHERE vector IS NULL AND embeddable = 1;
    CREATE INDEX chunks_by_vector ON chunks(vector) WHERE vector IS NOT NULL;
    CREATE VIRTUAL TABLE chunks_fts USING fts5(
        tokens,
        content = '',
        tokenize = 'unicode61 remove_diacritics 0'
    );
    CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab(chunks_fts, 'row')
"""


def hash_key(key: str) -> bytes:
    """The stored form of a text hash: 32 bytes for a sha256 hex digest, else its UTF-8."""
    if len(key) == 64:
        try:
            return bytes.fromhex(key)
        except ValueError:
            pass
    return key.encode("utf-8")


def hash_text(stored: bytes) -> str:
    """The inverse of :func:`hash_key`."""
    return stored.hex() if len(stored) == 32 else stored.decode("utf-8", "replace")


def _migrate_2(conn: sqlite3.Connection, batch: int = 4096) -> None:
    """Schema 2 (issue 17): each vector once, compactly, in ``embeddings``; chunk texts
    once per file and tokens, deflated; contentless FTS5; counters in ``meta``.

    The embedding cache is converted (float32 → float16, or centred int8 once a model has
    :data:`CENTRE_AFTER` vectors). The old files, chunks and vectors are dropped, not
    converted: the identity changed with the schema, so the next sync rebuilds the index from
    the files with every vector taken from the cache, and nothing is embedded again.
    """
    rows = conn.execute(
        "SELECT provider, model, provider_key, dims, hash, embedding FROM embedding_cache "
        "ORDER BY provider, model, provider_key, dims, rowid"
    )
    pending: list[tuple[str, str, str, int, str, bytes]] = list(rows)
    for statement in _V2_TABLES.split(";"):
        if statement.strip():
            conn.execute(statement)
    models: dict[tuple[str, str, str, int], tuple[int, np.ndarray | None]] = {}
    for start in range(0, len(pending), batch):
        groups: dict[tuple[str, str, str, int], list[tuple[str, bytes]]] = {}
        for provider, model, provider_key, dims, key, blob in pending[start : start + batch]:
            if dims > 0 and len(blob) == 4 * dims:
                groups.setdefault((provider, model, provider_key, dims), []).append((key, blob))
        for ident, items in groups.items():
            vectors = np.stack([np.frombuffer(blob, dtype=np.float32) for _, blob in items])
            if ident not in models:
                centre = vectors.mean(axis=0) if len(vectors) >= CENTRE_AFTER else None
                cur = conn.execute(
                    "INSERT INTO embedding_models(provider, model, provider_key, dims, centre) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (*ident, None if centre is None else centre.astype(np.float32).tobytes()),
                )
                models[ident] = (int(cur.lastrowid or 0), centre)
            model_id, centre = models[ident]
            conn.executemany(
                "INSERT OR IGNORE INTO embeddings(model, hash, vector) VALUES (?, ?, ?)",
                [
                    (model_id, hash_key(key), blob)
                    for (key, _), blob in zip(items, encode(vectors, centre), strict=True)
                ],
            )
    # The old identity no longer matches (the schema is part of it), so the next sync rebuilds;
    # only its chunker version is kept: ``[chunking] boundaries = "auto"`` keeps a greedily cut
    # index greedy, and the rebuild then finds every vector in the cache.
    old = conn.execute("SELECT value FROM meta WHERE key = 'identity'").fetchone()
    try:
        chunker = json.loads(old[0]).get("chunker") if old else None
    except (ValueError, AttributeError):
        chunker = None
    conn.execute("DELETE FROM meta WHERE key = 'identity'")
    if chunker is not None:
        conn.execute(
            "INSERT INTO meta(key, value) VALUES ('identity', ?)",
            (json.dumps({"chunker": chunker}),),
        )
    count = conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]
    for name in COUNTERS:
        conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
            (f"count:{name}", str(count if name == "embeddings" else 0)),
        )
