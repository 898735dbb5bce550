"""Moving the embedding cache from one SQLite index to another: into a rebuilt index (so that
a rebuild embeds nothing again) and out of a damaged one (what can still be read, range by
range). The cache is the ``embedding_models`` and ``embeddings`` tables of schema 2, or the
``embedding_cache`` table of schema 1 (a damaged file may be either)."""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from memdir.index.sqlite.codec import encode
from memdir.index.sqlite.schema import hash_key

_MODEL_COLUMNS = "id, provider, model, provider_key, dims, centre"


@dataclass
class CacheRows:
    """Cached embeddings as read from an index: model rows and ``(id, model id, hash, blob)``
    (``id`` None where the source had none: schema 1)."""

    models: list[tuple[int, str, str, str, int, bytes | None]] = field(default_factory=list)
    vectors: list[tuple[int | None, int, bytes, bytes]] = field(default_factory=list)
    #: The companion model's codes ``(model id, hash, code)`` (schema 3).
    companion: list[tuple[int, bytes, bytes]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.vectors)


def read_cache(conn: sqlite3.Connection) -> CacheRows:
    """The whole cache of a readable schema-2 index.

    Raises:
        sqlite3.DatabaseError: the file is damaged (see :func:`salvage_cache`).
    """
    return CacheRows(
        conn.execute(f"SELECT {_MODEL_COLUMNS} FROM embedding_models").fetchall(),
        conn.execute("SELECT id, model, hash, vector FROM embeddings").fetchall(),
        conn.execute("SELECT model, hash, code FROM companion").fetchall(),
    )


def write_cache(conn: sqlite3.Connection, rows: CacheRows) -> None:
    """Put ``rows`` into the (empty) cache of a fresh index, ids kept (inside a write
    transaction), and count them. Vector ids are kept too: a process that had the old index
    open compares ``(chunk, vector id)`` links to keep the rows of its vector matrix, so an id
    must name the same vector on both sides of a rebuild."""
    conn.executemany(
        f"INSERT OR IGNORE INTO embedding_models({_MODEL_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
        rows.models,
    )
    before = conn.total_changes
    conn.executemany(
        "INSERT OR IGNORE INTO embeddings(id, model, hash, vector) VALUES (?, ?, ?, ?)",
        rows.vectors,
    )
    added = conn.total_changes - before
    before = conn.total_changes
    conn.executemany(
        "INSERT OR IGNORE INTO companion(model, hash, code) VALUES (?, ?, ?)", rows.companion
    )
    coded = conn.total_changes - before
    for name, count in (("embeddings", added), ("companion", coded)):
        conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) "
            "DO UPDATE SET value = CAST(value AS INTEGER) + excluded.value",
            (f"count:{name}", count),
        )


def salvage_cache(path: Path, batch: int = 256) -> CacheRows:
    """The cached embeddings of a damaged index that can still be read, range by range of
    rowids (a damaged page loses its own rows, not the rest). Read-only; never raises."""
    rows = CacheRows()
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return rows
    try:
        try:
            rows.models = conn.execute(f"SELECT {_MODEL_COLUMNS} FROM embedding_models").fetchall()
        except sqlite3.Error:
            return _salvage_v1(conn, batch)
        for low in range(0, _top(conn, "embeddings") + 1, batch):
            with contextlib.suppress(sqlite3.Error):
                rows.vectors.extend(
                    conn.execute(
                        "SELECT id, model, hash, vector FROM embeddings "
                        "WHERE rowid >= ? AND rowid < ?",
                        (low, low + batch),
                    ).fetchall()
                )
        with contextlib.suppress(sqlite3.Error):  # codes are cheap to make again
            rows.companion = conn.execute("SELECT model, hash, code FROM companion").fetchall()
    finally:
        conn.close()
    return rows


def _salvage_v1(conn: sqlite3.Connection, batch: int) -> CacheRows:
    """Schema 1's ``embedding_cache`` rows, converted (float32 → float16)."""
    rows = CacheRows()
    models: dict[tuple[str, str, str, int], int] = {}
    for low in range(0, _top(conn, "embedding_cache") + 1, batch):
        with contextlib.suppress(sqlite3.Error):
            for provider, model, provider_key, dims, key, blob in conn.execute(
                "SELECT provider, model, provider_key, dims, hash, embedding FROM embedding_cache "
                "WHERE rowid >= ? AND rowid < ?",
                (low, low + batch),
            ):
                if dims <= 0 or len(blob) != 4 * dims:
                    continue
                ident = (provider, model, provider_key, dims)
                if ident not in models:
                    models[ident] = len(models) + 1
                    rows.models.append((models[ident], *ident, None))
                vector = np.frombuffer(blob, dtype=np.float32)
                rows.vectors.append((None, models[ident], hash_key(key), encode(vector, None)[0]))
    return rows


def _top(conn: sqlite3.Connection, table: str) -> int:
    try:
        return int(conn.execute(f"SELECT max(rowid) FROM {table}").fetchone()[0] or 0)
    except sqlite3.Error:
        return 1 << 20  # the b-tree's root is damaged: try the usual range anyway
