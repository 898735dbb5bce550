"""The SQLite index's data: :class:`SqliteStore`, the :class:`~memdir.index.base.IndexBackend`
of :mod:`memdir.index.sqlite`.

Everything here is a cache of the Markdown files. One :class:`SqliteStore` wraps one connection
in autocommit mode; every multi-row write runs inside :meth:`SqliteStore.write` (``BEGIN
IMMEDIATE`` … ``COMMIT``), so readers in other processes see a file's old chunks or its new ones,
never half. WAL mode lets readers run while a writer writes; a busy timeout absorbs short waits.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from memdir.embeddings.base import Vectors
from memdir.index.base import ChunkRow, FileRow, NewChunk
from memdir.index.sqlite.fts import SqliteKeywordSearch
from memdir.index.sqlite.schema import migrate
from memdir.sqlitedb import open_wal

BUSY_TIMEOUT_S = 30.0

__all__ = ["ChunkRow", "FileRow", "NewChunk", "SqliteStore", "connect"]


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating if needed) an index database in WAL mode and migrate it.

    Raises:
        sqlite3.DatabaseError: the file is not a usable SQLite database.
    """
    return open_wal(path, timeout=BUSY_TIMEOUT_S, migrate=migrate, foreign_keys=True)


class SqliteStore(SqliteKeywordSearch):
    """Files, chunks, FTS, vectors, embedding cache and meta in one SQLite database.

    Implements :class:`memdir.index.base.IndexBackend`.
    """

    backend = "sqlite"

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path

    @classmethod
    def open(cls, path: Path) -> SqliteStore:
        """Open the database at ``path`` (see :func:`connect`)."""
        return cls(connect(path), path)

    def close(self) -> None:
        self.conn.close()

    # -- transactions -----------------------------------------------------------------------

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction: ``BEGIN IMMEDIATE`` … ``COMMIT`` (rolled back on error)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    # -- meta -------------------------------------------------------------------------------

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
        """A counter bumped by every write that changes chunks or vectors."""
        value = self.meta_get("generation")
        return int(value) if value else 0

    def _bump_generation(self) -> None:
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES ('generation', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )

    # -- files and chunks -------------------------------------------------------------------

    def file_rows(self) -> dict[str, FileRow]:
        rows = self.conn.execute(
            "SELECT path, source, hash, mtime_ns, size, warning FROM files"
        ).fetchall()
        return {r[0]: FileRow(*r) for r in rows}

    def replace_file(
        self,
        *,
        path: str,
        source: str,
        hash: str,
        mtime_ns: int,
        size: int,
        warning: str | None,
        model: str,
        chunks: Sequence[NewChunk],
    ) -> None:
        """Replace everything indexed for ``path`` in one transaction."""
        now = time.time()
        with self.write() as conn:
            self._delete_chunks(path)
            conn.execute(
                "INSERT INTO files(path, source, hash, mtime_ns, size, indexed_at, warning) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET "
                "source = excluded.source, hash = excluded.hash, mtime_ns = excluded.mtime_ns, "
                "size = excluded.size, indexed_at = excluded.indexed_at, "
                "warning = excluded.warning",
                (path, source, hash, mtime_ns, size, now, warning),
            )
            for chunk in chunks:
                cur = conn.execute(
                    "INSERT INTO chunks(id, path, source, start_line, end_line, hash, model, "
                    "text, embeddable, token_count, updated_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT(id) DO NOTHING",
                    (
                        chunk.id,
                        path,
                        source,
                        chunk.start_line,
                        chunk.end_line,
                        chunk.hash,
                        model,
                        chunk.text,
                        int(chunk.embed),
                        len(chunk.tokens.split()),
                        now,
                    ),
                )
                if cur.rowcount == 0:
                    continue  # the same chunk twice in one file: keep one
                seq = cur.lastrowid
                conn.execute(
                    "INSERT INTO chunks_fts(rowid, tokens) VALUES (?, ?)", (seq, chunk.tokens)
                )
                if chunk.embedding is not None:
                    conn.execute(
                        "INSERT INTO vectors(seq, embedding) VALUES (?, ?)",
                        (seq, _to_blob(chunk.embedding)),
                    )
            self._bump_generation()

    def touch_file(self, path: str, mtime_ns: int, size: int) -> None:
        """Record a new (mtime, size) for a file whose content hash did not change."""
        with self.write() as conn:
            conn.execute(
                "UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?", (mtime_ns, size, path)
            )

    def delete_files(self, paths: Iterable[str]) -> int:
        """Forget files (and their chunks); returns how many were removed."""
        removed = 0
        with self.write() as conn:
            for path in paths:
                self._delete_chunks(path)
                removed += conn.execute("DELETE FROM files WHERE path = ?", (path,)).rowcount
            if removed:
                self._bump_generation()
        return removed

    def _delete_chunks(self, path: str) -> None:
        seqs = [r[0] for r in self.conn.execute("SELECT seq FROM chunks WHERE path = ?", (path,))]
        for seq in seqs:
            self.conn.execute("DELETE FROM chunks_fts WHERE rowid = ?", (seq,))
            self.conn.execute("DELETE FROM vectors WHERE seq = ?", (seq,))
        self.conn.execute("DELETE FROM chunks WHERE path = ?", (path,))

    def chunks_without_vectors(
        self,
        limit: int = 10_000,
        *,
        newest_first: bool = False,
        seqs: Sequence[int] | None = None,
    ) -> list[tuple[int, str, str]]:
        """``(seq, hash, text)`` of chunks that still need an embedding."""
        if seqs is not None and not seqs:
            return []
        order = "f.mtime_ns DESC, c.seq" if newest_first else "c.seq"
        among, args = "", []
        if seqs is not None:
            among = f" AND c.seq IN ({','.join('?' * len(seqs))})"
            args = [int(s) for s in seqs]
        rows = self.conn.execute(
            "SELECT c.seq, c.hash, c.text FROM chunks c LEFT JOIN vectors v ON v.seq = c.seq "
            "JOIN files f ON f.path = c.path "
            f"WHERE v.seq IS NULL AND c.embeddable = 1{among} ORDER BY {order} LIMIT ?",
            (*args, limit),
        ).fetchall()
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    def chunk_tokens(self, seqs: Sequence[int]) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for start in range(0, len(seqs), 500):
            part = [int(s) for s in seqs[start : start + 500]]
            marks = ",".join("?" * len(part))
            for seq, tokens in self.conn.execute(
                f"SELECT rowid, tokens FROM chunks_fts WHERE rowid IN ({marks})", part
            ):
                out[int(seq)] = str(tokens).split()
        return out

    def set_vectors(self, items: Sequence[tuple[int, Vectors]]) -> None:
        """Store embeddings for existing chunks (skipping chunks deleted meanwhile)."""
        with self.write() as conn:
            for seq, vec in items:
                conn.execute(
                    "INSERT INTO vectors(seq, embedding) SELECT ?, ? "
                    "WHERE EXISTS (SELECT 1 FROM chunks WHERE seq = ?) "
                    "ON CONFLICT(seq) DO UPDATE SET embedding = excluded.embedding",
                    (seq, _to_blob(vec), seq),
                )
            self._bump_generation()

    def chunks_by_seq(self, seqs: Sequence[int]) -> dict[int, ChunkRow]:
        out: dict[int, ChunkRow] = {}
        for start in range(0, len(seqs), 500):
            part = list(seqs[start : start + 500])
            marks = ",".join("?" * len(part))
            for r in self.conn.execute(
                "SELECT seq, id, path, source, start_line, end_line, text FROM chunks "
                f"WHERE seq IN ({marks})",
                part,
            ):
                out[int(r[0])] = ChunkRow(*r)
        return out

    def counts(self) -> dict[str, int]:
        """Row counts for status: files, chunks, vectors, pending embeddings, cache size."""
        q = self.conn.execute
        return {
            "files": int(q("SELECT count(*) FROM files").fetchone()[0]),
            "chunks": int(q("SELECT count(*) FROM chunks").fetchone()[0]),
            "vectors": int(q("SELECT count(*) FROM vectors").fetchone()[0]),
            "pending_vectors": int(
                q(
                    "SELECT count(*) FROM chunks c LEFT JOIN vectors v ON v.seq = c.seq "
                    "WHERE v.seq IS NULL AND c.embeddable = 1"
                ).fetchone()[0]
            ),
            "cached_embeddings": int(q("SELECT count(*) FROM embedding_cache").fetchone()[0]),
        }

    def file_mtimes(self, *, source: str) -> dict[str, float]:
        """Modification times (seconds) of the indexed files from ``source``."""
        rows = self.conn.execute("SELECT path, mtime_ns FROM files WHERE source = ?", (source,))
        return {str(p): m / 1e9 for p, m in rows if m >= 0}

    def file_warnings(self) -> dict[str, str]:
        """Files indexed with a warning (binary, invalid UTF-8, too large to embed)."""
        rows = self.conn.execute("SELECT path, warning FROM files WHERE warning IS NOT NULL")
        return {str(p): str(w) for p, w in rows}

    # -- vectors ----------------------------------------------------------------------------

    def all_vectors(self) -> tuple[np.ndarray, Vectors]:
        """All stored vectors as ``(seqs, matrix)``; the matrix is empty when there are none."""
        rows = self.conn.execute("SELECT seq, embedding FROM vectors ORDER BY seq").fetchall()
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        seqs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
        return seqs, matrix.reshape(len(rows), -1)

    def vectors_by_seq(self, seqs: Sequence[int]) -> dict[int, Vectors]:
        out: dict[int, Vectors] = {}
        for start in range(0, len(seqs), 500):
            part = [int(s) for s in seqs[start : start + 500]]
            marks = ",".join("?" * len(part))
            for seq, blob in self.conn.execute(
                f"SELECT seq, embedding FROM vectors WHERE seq IN ({marks})", part
            ):
                out[int(seq)] = np.frombuffer(blob, dtype=np.float32)
        return out

    # -- embedding cache --------------------------------------------------------------------

    def cache_get(
        self, provider: str, model: str, provider_key: str, hashes: Sequence[str]
    ) -> dict[str, Vectors]:
        out: dict[str, Vectors] = {}
        for start in range(0, len(hashes), 500):
            part = list(hashes[start : start + 500])
            marks = ",".join("?" * len(part))
            for h, blob in self.conn.execute(
                "SELECT hash, embedding FROM embedding_cache WHERE provider = ? AND model = ? "
                f"AND provider_key = ? AND hash IN ({marks})",
                [provider, model, provider_key, *part],
            ):
                out[str(h)] = np.frombuffer(blob, dtype=np.float32)
        return out

    def cache_put(
        self, provider: str, model: str, provider_key: str, items: Sequence[tuple[str, Vectors]]
    ) -> None:
        now = time.time()
        with self.write() as conn:
            self._bump_generation()  # the cache size is part of counts()
            conn.executemany(
                "INSERT OR REPLACE INTO embedding_cache(provider, model, provider_key, hash, "
                "dims, embedding, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (provider, model, provider_key, h, int(v.shape[-1]), _to_blob(v), now)
                    for h, v in items
                ],
            )


def _to_blob(vec: Vectors) -> bytes:
    return np.ascontiguousarray(vec, dtype=np.float32).tobytes()
