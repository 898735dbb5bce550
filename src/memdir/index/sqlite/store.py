"""The SQLite index's data: :class:`SqliteStore`, the :class:`~memdir.index.base.IndexBackend`
of :mod:`memdir.index.sqlite` (tables: :mod:`memdir.index.sqlite.schema`).

Everything here is a cache of the Markdown files. One :class:`SqliteStore` wraps one connection
in autocommit mode; every multi-row write runs inside :meth:`SqliteStore.write` (``BEGIN
IMMEDIATE`` … ``COMMIT``), so readers in other processes see a file's old chunks or its new
ones, never half. WAL mode lets readers run while a writer writes; a busy timeout absorbs short
waits. Counters in ``meta`` change in the same transactions, so :meth:`SqliteStore.counts`
reads them instead of counting rows.
"""

from __future__ import annotations

import sqlite3
import time
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from pathlib import Path

from memdir.index.base import (
    ChunkRow,
    EmbeddingSpace,
    FileRow,
    NewChunk,
)
from memdir.index.sqlite.bodies import BodyCache, chunk_text, file_body
from memdir.index.sqlite.companion import SqliteCompanion
from memdir.index.sqlite.fts import SqliteKeywordSearch, deflate_text, inflate_text
from memdir.index.sqlite.meta import BUSY_TIMEOUT_S, LINK_LOG
from memdir.index.sqlite.schema import hash_key, hash_text, migrate
from memdir.index.sync import chunk_id
from memdir.sqlitedb import open_wal

__all__ = ["ChunkRow", "FileRow", "NewChunk", "SqliteStore", "connect"]


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating if needed) an index database in WAL mode and migrate it.

    Raises:
        sqlite3.DatabaseError: the file is not a usable SQLite database.
    """
    return open_wal(path, timeout=BUSY_TIMEOUT_S, migrate=migrate, foreign_keys=True)


class SqliteStore(SqliteKeywordSearch, SqliteCompanion):
    """Files, chunks, keyword index, vectors (the embedding cache) and meta in one SQLite
    database. Implements :class:`memdir.index.base.IndexBackend`.

    Args:
        space: the embedding model of the index's vectors (None: keyword-only).
    """

    backend = "sqlite"

    def __init__(
        self,
        conn: sqlite3.Connection,
        path: Path,
        *,
        space: EmbeddingSpace | None = None,
    ) -> None:
        self.conn = conn
        self.path = path
        self.space = space
        self._body_cache = BodyCache()
        self._links = []
        self.link_log = deque(maxlen=LINK_LOG)

    @classmethod
    def open(cls, path: Path, *, space: EmbeddingSpace | None = None) -> SqliteStore:
        """Open the database at ``path`` (see :func:`connect`)."""
        return cls(connect(path), path, space=space)

    def close(self) -> None:
        self.conn.close()

    # -- files --------------------------------------------------------------------------

    def file_rows(self, paths: Sequence[str] | None = None) -> dict[str, FileRow]:
        select = "SELECT path, source, hash, mtime_ns, size, warning FROM files"
        if paths is None:
            return {r[0]: FileRow(*r) for r in self.conn.execute(select).fetchall()}
        out: dict[str, FileRow] = {}
        for start in range(0, len(paths), 500):
            part = list(paths[start : start + 500])
            marks = ",".join("?" * len(part))
            rows = self.conn.execute(f"{select} WHERE path IN ({marks})", part).fetchall()
            out.update((r[0], FileRow(*r)) for r in rows)
        return out

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
        with self.write() as conn:
            row = conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
            if row is not None:
                self._delete_chunks(int(row[0]))
            conn.execute(
                "INSERT INTO files(path, source, hash, mtime_ns, size, indexed_at, warning) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET "
                "source = excluded.source, hash = excluded.hash, mtime_ns = excluded.mtime_ns, "
                "size = excluded.size, indexed_at = excluded.indexed_at, "
                "warning = excluded.warning",
                (path, source, hash, mtime_ns, size, time.time(), warning),
            )
            if row is None:
                self._add_counts({"files": 1})
            file_id = int(
                conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()[0]
            )
            unique = list({c.id: c for c in chunks}.values())  # the same chunk twice: keep one
            body, own_text = file_body(unique)
            conn.execute("UPDATE files SET body = ? WHERE id = ?", (deflate_text(body), file_id))
            self._insert_chunks(file_id, unique, own_text)
            self._bump_generation()

    def _insert_chunks(self, file_id: int, chunks: Sequence[NewChunk], own_text: set[int]) -> None:
        """Insert ``chunks``; those at positions ``own_text`` keep their own text (their
        file's body cannot give it back)."""
        model = self.bound_model()
        ids = self._vector_ids(model.id, chunks) if model is not None else {}
        counts: Counter[str] = Counter()
        for position, chunk in enumerate(chunks):
            words = chunk.tokens.split()
            vector = ids.get(chunk.vector_key) if chunk.embedding is not None else None
            cur = self.conn.execute(
                "INSERT INTO chunks(file, start_line, end_line, start_col, end_col, hash, "
                "vector, embeddable, token_count, tokens, text) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    file_id,
                    chunk.start_line,
                    chunk.end_line,
                    chunk.start_col or None,
                    chunk.end_col,
                    bytes.fromhex(chunk.hash),
                    vector,
                    int(chunk.embed),
                    len(words),
                    deflate_text(chunk.tokens),
                    deflate_text(chunk.text) if position in own_text else None,
                ),
            )
            seq = int(cur.lastrowid or 0)
            self.conn.execute(
                "INSERT INTO chunks_fts(rowid, tokens) VALUES (?, ?)", (seq, chunk.tokens)
            )
            counts.update(chunks=1, tokens=len(words))
            if vector is not None:
                counts["vectors"] += 1
                self._link(seq, int(vector))
            elif chunk.embed:
                counts["pending"] += 1
        self._add_counts(counts)

    def _vector_ids(self, model_id: int, chunks: Sequence[NewChunk]) -> dict[str, int]:
        """The ``embeddings`` row of each chunk's vector key that has one."""
        keys = list({c.vector_key for c in chunks if c.embedding is not None and c.vector_key})
        found: dict[str, int] = {}
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            marks = ",".join("?" * len(part))
            for rowid, key in self.conn.execute(
                f"SELECT id, hash FROM embeddings WHERE model = ? AND hash IN ({marks})",
                [model_id, *(hash_key(k) for k in part)],
            ):
                found[hash_text(key)] = int(rowid)
        return found

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
                row = conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
                if row is None:
                    continue
                self._delete_chunks(int(row[0]))
                conn.execute("DELETE FROM files WHERE id = ?", (row[0],))
                removed += 1
            if removed:
                self._add_counts({"files": -removed})
                self._bump_generation()
        return removed

    def _delete_chunks(self, file_id: int) -> None:
        """Delete a file's chunks with their keyword entries (a contentless FTS5 table is told
        the tokens it indexed), and count what left."""
        rows = self.conn.execute(
            "SELECT seq, tokens, token_count, vector, embeddable FROM chunks WHERE file = ?",
            (file_id,),
        ).fetchall()
        if not rows:
            return
        counts: Counter[str] = Counter()
        for seq, blob, token_count, vector, embeddable in rows:
            tokens = inflate_text(blob)
            self.conn.execute(
                "INSERT INTO chunks_fts(chunks_fts, rowid, tokens) VALUES ('delete', ?, ?)",
                (seq, tokens),
            )
            counts.update(chunks=-1, tokens=-int(token_count))
            if vector is not None:
                counts["vectors"] -= 1
                self._link(int(seq), 0)
            elif embeddable:
                counts["pending"] -= 1
        self.conn.execute("DELETE FROM chunks WHERE file = ?", (file_id,))
        self._add_counts(counts)

    # -- chunks -------------------------------------------------------------------------

    def chunks_without_vectors(
        self,
        limit: int = 10_000,
        *,
        newest_first: bool = False,
        seqs: Sequence[int] | None = None,
        path: str | None = None,
    ) -> list[tuple[int, str, str]]:
        """``(seq, hash, text)`` of chunks that still need an embedding: in ``seq`` order, or
        the most recently modified files' first; only among ``seqs``, or of ``path``, when
        given."""
        if seqs is not None and not seqs:
            return []
        order = "f.mtime_ns DESC, c.seq" if newest_first else "c.seq"
        among, args = "", []
        if seqs is not None:
            among = f" AND c.seq IN ({','.join('?' * len(seqs))})"
            args = [int(s) for s in seqs]
        path_arg: list[object] = []
        if path is not None:
            among += " AND f.path = ?"
            path_arg.append(path)
        rows = self.conn.execute(
            "SELECT c.seq, c.hash FROM chunks c JOIN files f ON f.id = c.file "
            f"WHERE c.vector IS NULL AND c.embeddable = 1{among} ORDER BY {order} LIMIT ?",
            (*args, *path_arg, limit),
        ).fetchall()
        texts = self.chunks_by_seq([int(seq) for seq, _ in rows])
        return [(int(seq), d.hex(), texts[seq].text) for seq, d in rows if seq in texts]

    def chunk_tokens(self, seqs: Sequence[int]) -> dict[int, list[str]]:
        """The stored keyword tokens of these chunks."""
        return {seq: tokens.split() for seq, tokens in self.stored_tokens(seqs)}

    def chunks_by_seq(self, seqs: Sequence[int]) -> dict[int, ChunkRow]:
        model = self.space.model if self.space is not None else "fts"
        found = []
        for start in range(0, len(seqs), 500):
            part = [int(s) for s in seqs[start : start + 500]]
            marks = ",".join("?" * len(part))
            found += self.conn.execute(
                "SELECT c.seq, c.file, f.hash, f.path, f.source, c.start_line, c.end_line, "
                "c.start_col, c.end_col, c.hash, c.text FROM chunks c "
                f"JOIN files f ON f.id = c.file WHERE c.seq IN ({marks})",
                part,
            ).fetchall()
        bodies = self._bodies({(r[1], r[2]) for r in found if r[10] is None})
        out: dict[int, ChunkRow] = {}
        for seq, file_id, file_hash, path, source, s, e, sc, ec, digest, own in found:
            if own is not None:
                text = inflate_text(own)
            elif (file_id, file_hash) in bodies:
                text = chunk_text(bodies[(file_id, file_hash)], s, e, sc or 0, ec)
            else:
                continue  # its file was re-indexed between the two reads: the chunk is gone
            out[int(seq)] = ChunkRow(
                int(seq),
                chunk_id(source, path, s, e, digest.hex(), model),
                path,
                source,
                s,
                e,
                text,
            )
        return out

    def _bodies(self, keys: set[tuple[int, str]]) -> dict[tuple[int, str], list[str]]:
        """The split body lines of these (file id, file hash), from the cache or the table."""
        out: dict[tuple[int, str], list[str]] = {}
        missing: list[int] = []
        for key in keys:
            lines = self._body_cache.get(key)
            if lines is None:
                missing.append(key[0])
            else:
                out[key] = lines
        for start in range(0, len(missing), 500):
            part = missing[start : start + 500]
            marks = ",".join("?" * len(part))
            for file_id, file_hash, body in self.conn.execute(
                f"SELECT id, hash, body FROM files WHERE id IN ({marks})", part
            ):
                lines = inflate_text(body).split("\n") if body is not None else []
                self._body_cache.put((file_id, file_hash), lines)
                out[(file_id, file_hash)] = lines
        return out

    def counts(self) -> dict[str, int]:
        """Counts for status: files, chunks, vectors, pending embeddings, cache size."""
        return {
            "files": self.counter("files"),
            "chunks": self.counter("chunks"),
            "vectors": self.counter("vectors"),
            "pending_vectors": self.counter("pending"),
            "cached_embeddings": self.counter("embeddings"),
            "companion_codes": self.counter("companion"),
        }

    def file_mtimes(self, *, source: str) -> dict[str, float]:
        """Modification times (seconds) of the indexed files from ``source``."""
        rows = self.conn.execute("SELECT path, mtime_ns FROM files WHERE source = ?", (source,))
        return {str(p): m / 1e9 for p, m in rows if m >= 0}

    def file_warnings(self) -> dict[str, str]:
        """Files indexed with a warning (binary, invalid UTF-8, too large to embed)."""
        rows = self.conn.execute("SELECT path, warning FROM files WHERE warning IS NOT NULL")
        return {str(p): str(w) for p, w in rows}
