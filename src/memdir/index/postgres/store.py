"""One workspace's rows in PostgreSQL: the :class:`~memdir.index.base.IndexBackend` of
:mod:`memdir.index.postgres` (tables and search strategy described there)."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memdir.embeddings.base import Vectors
from memdir.index.base import FileRow, NewChunk
from memdir.index.postgres.companion import PostgresCompanion
from memdir.index.postgres.copies import PostgresCopies
from memdir.index.postgres.fts import SCAN_CAP, PostgresKeywordSearch  # noqa: F401
from memdir.index.postgres.schema import advisory_key, connect
from memdir.index.postgres.vectors import (  # noqa: F401
    EF_SEARCH_MIN,
    PostgresVectorSearch,
    _to_numpy,
)


def workspace_lock_key(workspace_id: str) -> int:
    """The advisory-lock key of a workspace (shared by the transaction and session locks)."""
    return advisory_key(f"workspace:{workspace_id}")


@dataclass
class _Pending:
    """What a write transaction changes in the per-workspace aggregates, applied once at its
    commit: one update per term row and one of the workspace row, however many files."""

    terms: Counter[str] = field(default_factory=Counter)
    chunks: int = 0
    tokens: int = 0
    changed: bool = False

    def merge(self, other: _Pending) -> None:
        self.terms.update(other.terms)
        self.chunks += other.chunks
        self.tokens += other.tokens
        self.changed = self.changed or other.changed


def _lexemes(tokens: str) -> set[str]:
    """The distinct lexemes of a ``tsv`` column: ``string_to_array(tokens, ' ')`` minus ''."""
    return {t for t in tokens.split(" ") if t}


def _pg_text(text: str) -> str:
    """PostgreSQL text cannot hold NUL: store U+FFFD instead (SQLite keeps the NUL)."""
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


class PostgresStore(PostgresKeywordSearch, PostgresVectorSearch, PostgresCompanion, PostgresCopies):
    """One workspace's index in a PostgreSQL database.

    Args:
        conn: a psycopg connection from :func:`memdir.index.postgres.connect` (autocommit).
        workspace_id: whose rows this store reads and writes.
        host: whose copy of the files this store indexes (``hostname:state folder``).
    """

    backend = "postgres"

    def __init__(self, conn: Any, workspace_id: str, host: str) -> None:
        self.conn = conn
        self.workspace_id = workspace_id
        self.host = host
        self._lock_key = workspace_lock_key(workspace_id)
        self._pending: list[_Pending] = []
        #: Paths written since :meth:`clear` in this transaction (None: not cleared). A rebuild
        #: then skips deleting chunks that cannot exist — and that matters: autovacuum's
        #: ANALYZE cannot see the uncommitted rows, may record the table as empty, and the
        #: planner then scans the growing table for every file's delete.
        self._fresh: set[str] | None = None
        #: Set when a write stored vectors (the lifecycle then checks whether the workspace
        #: has grown large enough for its own HNSW index).
        self.vectors_added = False
        #: Write transactions this store committed (the lifecycle's generation memo).
        self.commits = 0
        conn.execute(
            "INSERT INTO memdir_workspaces(workspace_id) VALUES (%s) ON CONFLICT DO NOTHING",
            (workspace_id,),
        )

    @classmethod
    def open(cls, url: str, workspace_id: str, host: str) -> PostgresStore:
        """Connect to ``url`` and open ``workspace_id`` there."""
        return cls(connect(url), workspace_id, host)

    def close(self) -> None:
        self.conn.close()

    # -- transactions -------------------------------------------------------------------

    @contextlib.contextmanager
    def write(self) -> Iterator[Any]:
        """A write transaction holding the workspace's advisory lock.

        A nested call joins the outer transaction (no savepoint: a rebuild writes thousands of
        files in one transaction, and thousands of subtransactions slow every reader); an
        error anywhere rolls back the whole. The term and workspace aggregates are written
        once, at the outer commit.
        """
        pending = _Pending()
        if self._pending:
            self._pending.append(pending)
            try:
                yield self.conn
            finally:
                self._pending.pop()
            self._pending[-1].merge(pending)
            return
        with self.conn.transaction():
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
            self._pending.append(pending)
            try:
                yield self.conn
            finally:
                self._pending.pop()
                self._fresh = None
                self.commits += 1
            self._apply(pending)

    def _apply(self, pending: _Pending) -> None:
        ws = self.workspace_id
        deltas = sorted((t, n) for t, n in pending.terms.items() if n)
        if deltas:
            self.conn.execute(
                "INSERT INTO memdir_terms(workspace_id, term, df) "
                "SELECT %s, u.term, u.n FROM unnest(%s::text[], %s::bigint[]) AS u(term, n) "
                "ON CONFLICT (workspace_id, term) DO UPDATE SET df = memdir_terms.df + excluded.df",
                (ws, [t for t, _ in deltas], [n for _, n in deltas]),
            )
            shrunk = [t for t, n in deltas if n < 0]
            if shrunk:
                self.conn.execute(
                    "DELETE FROM memdir_terms WHERE workspace_id = %s AND term = ANY(%s) "
                    "AND df <= 0",
                    (ws, shrunk),
                )
        if pending.changed or deltas or pending.chunks:
            self.conn.execute(
                "UPDATE memdir_workspaces SET generation = generation + 1, "
                "chunk_count = chunk_count + %s, token_total = token_total + %s "
                "WHERE workspace_id = %s",
                (pending.chunks, pending.tokens, ws),
            )

    def _changes(self) -> _Pending:
        if not self._pending:
            raise RuntimeError("call inside PostgresStore.write()")
        return self._pending[-1]

    # -- meta ---------------------------------------------------------------------------

    def meta_get(self, key: str) -> str | None:
        row = self._one(
            "SELECT value FROM memdir_meta WHERE workspace_id = %s AND key = %s",
            (self.workspace_id, key),
        )
        return None if row is None else str(row[0])

    def meta_set(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO memdir_meta(workspace_id, key, value) VALUES (%s, %s, %s) "
            "ON CONFLICT (workspace_id, key) DO UPDATE SET value = excluded.value",
            (self.workspace_id, key, value),
        )

    def generation(self) -> int:
        row = self._one(
            "SELECT generation FROM memdir_workspaces WHERE workspace_id = %s",
            (self.workspace_id,),
        )
        return int(row[0]) if row else 0

    # -- files and chunks ---------------------------------------------------------------

    def file_rows(self, paths: Sequence[str] | None = None) -> dict[str, FileRow]:
        """The files of this host's copy, with the (mtime, size) it saw."""
        rows = self.conn.execute(
            "SELECT c.path, f.source, c.hash, c.mtime_ns, c.size, f.warning "
            "FROM memdir_copies c JOIN memdir_files f ON f.workspace_id = c.workspace_id "
            "AND f.path = c.path WHERE c.workspace_id = %s AND c.host = %s"
            + ("" if paths is None else " AND c.path = ANY(%s)"),
            (self.workspace_id, self.host, *(() if paths is None else (list(paths),))),
        ).fetchall()
        return {
            str(r[0]): FileRow(str(r[0]), str(r[1]), str(r[2]), int(r[3]), int(r[4]), r[5])
            for r in rows
        }

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
        """Replace this host's copy of ``path`` in one transaction: the chunks it held and no
        other copy holds are deleted, chunks another copy holds already are shared (one row
        per chunk id), new ones inserted (docs/design.md#engines)."""
        now = time.time()
        with self.write() as conn:
            released = self._release([path])
            conn.execute(
                "INSERT INTO memdir_files(workspace_id, path, source, hash, mtime_ns, size, "
                "indexed_at, warning) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (workspace_id, path) DO UPDATE SET source = excluded.source, "
                "hash = excluded.hash, mtime_ns = excluded.mtime_ns, size = excluded.size, "
                "indexed_at = excluded.indexed_at, warning = excluded.warning",
                (self.workspace_id, path, source, hash, mtime_ns, size, now, warning),
            )
            self._seen(path, mtime_ns, size, hash=hash, now=now)
            seq_of = self._insert_chunks(path, source, model, now, chunks)
            held = dict(seq_of)
            shared = [c.id for c in chunks if c.id not in held]
            if shared:
                held.update(
                    (str(r[1]), int(r[0]))
                    for r in conn.execute(
                        "SELECT seq, id FROM memdir_chunks WHERE workspace_id = %s "
                        "AND id = ANY(%s)",
                        (self.workspace_id, list(dict.fromkeys(shared))),
                    ).fetchall()
                )
            if held:
                conn.execute(
                    "INSERT INTO memdir_holders(workspace_id, host, path, seq) "
                    "SELECT %s, %s, %s, u.seq FROM unnest(%s::bigint[]) AS u(seq) "
                    "ON CONFLICT DO NOTHING",
                    (self.workspace_id, self.host, path, sorted(set(held.values()))),
                )
            self._insert_vectors(
                [
                    (seq_of[c.id], c.embedding)
                    for c in {c.id: c for c in chunks}.values()  # one id, one content
                    if c.embedding is not None and c.id in seq_of
                ]
            )
            self._drop_orphans([seq for seq in released if seq not in set(held.values())])

    def _insert_chunks(
        self, path: str, source: str, model: str, now: float, chunks: Sequence[NewChunk]
    ) -> dict[str, int]:
        """Insert in order (so ``seq`` follows the file, as in SQLite), skipping an id already
        there; count the new lexemes and tokens. Returns ``{chunk id: seq}`` of new rows."""
        if not chunks:
            return {}
        rows = self.conn.execute(
            "INSERT INTO memdir_chunks(workspace_id, id, path, source, start_line, end_line, "
            "hash, model, text, tokens, embeddable, token_count, updated_at) "
            "SELECT %(ws)s, u.id, %(path)s, %(source)s, u.start_line, u.end_line, u.hash, "
            "%(model)s, u.text, u.tokens, u.embeddable, u.token_count, %(now)s "
            "FROM unnest(%(ids)s::text[], %(starts)s::integer[], %(ends)s::integer[], "
            "%(hashes)s::text[], %(texts)s::text[], %(tokens)s::text[], "
            "%(embeddable)s::boolean[], %(counts)s::integer[]) WITH ORDINALITY "
            "AS u(id, start_line, end_line, hash, text, tokens, embeddable, token_count, n) "
            "ORDER BY u.n ON CONFLICT (workspace_id, id) DO NOTHING RETURNING seq, id",
            {
                "ws": self.workspace_id,
                "path": path,
                "source": source,
                "model": model,
                "now": now,
                "ids": [c.id for c in chunks],
                "starts": [c.start_line for c in chunks],
                "ends": [c.end_line for c in chunks],
                "hashes": [c.hash for c in chunks],
                "texts": [_pg_text(c.text) for c in chunks],
                "tokens": [c.tokens for c in chunks],
                "embeddable": [c.embed for c in chunks],
                "counts": [len(c.tokens.split()) for c in chunks],
            },
        ).fetchall()
        seq_of = {str(r[1]): int(r[0]) for r in rows}
        if self._fresh is not None:
            self._fresh.add(path)
        changes = self._changes()
        for chunk in {c.id: c for c in chunks if c.id in seq_of}.values():
            changes.terms.update(_lexemes(chunk.tokens))
            changes.chunks += 1
            changes.tokens += len(chunk.tokens.split())
        return seq_of

    def _seen(
        self, path: str, mtime_ns: int, size: int, *, hash: str | None = None, now: float = 0.0
    ) -> None:
        """Record this host's copy of ``path`` (its hash when it was just indexed)."""
        if hash is None:
            self.conn.execute(
                "UPDATE memdir_copies SET mtime_ns = %s, size = %s WHERE workspace_id = %s "
                "AND host = %s AND path = %s",
                (mtime_ns, size, self.workspace_id, self.host, path),
            )
            return
        self.conn.execute(
            "INSERT INTO memdir_copies(workspace_id, host, path, hash, mtime_ns, size, "
            "indexed_at) VALUES (%s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (workspace_id, host, path) DO UPDATE SET hash = excluded.hash, "
            "mtime_ns = excluded.mtime_ns, size = excluded.size, indexed_at = excluded.indexed_at",
            (self.workspace_id, self.host, path, hash, mtime_ns, size, now),
        )

    def _release(self, paths: list[str]) -> list[int]:
        """Take this host's copy of ``paths`` off the chunks it held; returns their seqs (to
        be deleted by :meth:`_drop_orphans` once nothing holds them)."""
        if self._fresh is not None:  # a rebuild: nothing of these paths is held any more
            paths = [p for p in paths if p in self._fresh]
            if not paths:
                return []
        rows = self.conn.execute(
            "DELETE FROM memdir_holders WHERE workspace_id = %s AND host = %s "
            "AND path = ANY(%s) RETURNING seq",
            (self.workspace_id, self.host, paths),
        ).fetchall()
        return [int(r[0]) for r in rows]

    def _drop_orphans(self, seqs: list[int]) -> None:
        """Delete the chunks among ``seqs`` that no copy holds (their vectors cascade) and
        count what left."""
        if not seqs:
            return
        rows = self.conn.execute(
            "WITH gone AS (DELETE FROM memdir_chunks c WHERE c.workspace_id = %s "
            "AND c.seq = ANY(%s) AND NOT EXISTS (SELECT 1 FROM memdir_holders h "
            "WHERE h.seq = c.seq) RETURNING tsv, token_count) "
            "SELECT NULL, count(*), coalesce(sum(token_count), 0) FROM gone "
            "UNION ALL SELECT t.lexeme, count(*), 0 FROM gone, unnest(gone.tsv) AS t "
            "GROUP BY t.lexeme",
            (self.workspace_id, seqs),
        ).fetchall()
        changes = self._changes()
        for lexeme, count, tokens in rows:
            if lexeme is None:
                changes.chunks -= int(count)
                changes.tokens -= int(tokens)
                changes.changed = changes.changed or bool(count)
            else:
                changes.terms[str(lexeme)] -= int(count)

    def _insert_vectors(
        self, items: Sequence[tuple[int, Vectors]], *, upsert: bool = False
    ) -> None:
        """Insert vectors; ``upsert`` (from :meth:`set_vectors`) also replaces existing ones and
        skips chunks that are gone or belong to another workspace. Without it the seqs are the
        chunks just inserted, so no join is planned (see ``_fresh`` on stale statistics)."""
        by_dims: dict[int, list[tuple[int, Vectors]]] = {}
        for seq, vec in items:
            by_dims.setdefault(int(vec.shape[-1]), []).append((seq, vec))
        for dims, group in by_dims.items():
            if upsert:
                sql = (
                    "INSERT INTO memdir_vectors(seq, workspace_id, dims, embedding) "
                    "SELECT u.seq, %(ws)s, %(dims)s, u.embedding "
                    "FROM unnest(%(seqs)s::bigint[], %(vecs)s::vector[]) AS u(seq, embedding) "
                    "WHERE EXISTS (SELECT 1 FROM memdir_chunks c WHERE c.seq = u.seq "
                    "AND c.workspace_id = %(ws)s) ON CONFLICT (seq) DO UPDATE "
                    "SET embedding = excluded.embedding, dims = excluded.dims"
                )
            else:
                sql = (
                    "INSERT INTO memdir_vectors(seq, workspace_id, dims, embedding) "
                    "SELECT u.seq, %(ws)s, %(dims)s, u.embedding "
                    "FROM unnest(%(seqs)s::bigint[], %(vecs)s::vector[]) AS u(seq, embedding)"
                )
            self.conn.execute(
                sql,
                {
                    "ws": self.workspace_id,
                    "dims": dims,
                    "seqs": [seq for seq, _ in group],
                    "vecs": [np.asarray(v, dtype=np.float32) for _, v in group],
                },
            )
        if items:
            self._changes().changed = True
            self.vectors_added = True

    def touch_file(self, path: str, mtime_ns: int, size: int) -> None:
        """Record the (mtime, size) this host sees for an unchanged file."""
        with self.write():
            self._seen(path, mtime_ns, size)

    def delete_files(self, paths: Iterable[str]) -> int:
        """Drop this host's copy of ``paths``; a file no host has any more is forgotten."""
        wanted = list(dict.fromkeys(paths))
        if not wanted:
            return 0
        with self.write() as conn:
            self._drop_orphans(self._release(wanted))
            removed = int(
                conn.execute(
                    "DELETE FROM memdir_copies WHERE workspace_id = %s AND host = %s "
                    "AND path = ANY(%s)",
                    (self.workspace_id, self.host, wanted),
                ).rowcount
            )
            conn.execute(
                "DELETE FROM memdir_files f WHERE f.workspace_id = %s AND f.path = ANY(%s) "
                "AND NOT EXISTS (SELECT 1 FROM memdir_copies c WHERE c.workspace_id = "
                "f.workspace_id AND c.path = f.path)",
                (self.workspace_id, wanted),
            )
            if removed:
                self._changes().changed = True
        return removed

    def chunks_without_vectors(
        self,
        limit: int = 10_000,
        *,
        newest_first: bool = False,
        seqs: Sequence[int] | None = None,
        path: str | None = None,
    ) -> list[tuple[int, str, str]]:
        if seqs is not None and not seqs:
            return []
        order = "f.mtime_ns DESC, c.seq" if newest_first else "c.seq"
        among = " AND c.seq = ANY(%s)" if seqs is not None else ""
        among += " AND c.path = %s" if path is not None else ""
        args: list[object] = [self.workspace_id]
        if seqs is not None:
            args.append([int(s) for s in seqs])
        if path is not None:
            args.append(path)
        rows = self.conn.execute(
            "SELECT c.seq, c.hash, c.text FROM memdir_chunks c JOIN memdir_files f "
            "ON f.workspace_id = c.workspace_id AND f.path = c.path WHERE c.workspace_id = %s "
            f"AND c.embeddable{among} AND NOT EXISTS (SELECT 1 FROM memdir_vectors v "
            f"WHERE v.seq = c.seq) ORDER BY {order} LIMIT %s",
            (*args, limit),
        ).fetchall()
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    def chunk_tokens(self, seqs: Sequence[int]) -> dict[int, list[str]]:
        if not seqs:
            return {}
        rows = self.conn.execute(
            "SELECT seq, tokens FROM memdir_chunks WHERE workspace_id = %s AND seq = ANY(%s)",
            (self.workspace_id, [int(s) for s in seqs]),
        ).fetchall()
        return {int(seq): str(tokens).split() for seq, tokens in rows}

    def set_vectors(self, items: Sequence[tuple[int, str, Vectors]]) -> None:
        """Store chunk vectors (the caller has put them in the cache under their keys too)."""
        with self.write():
            self._insert_vectors([(seq, vec) for seq, _, vec in items], upsert=True)

    def counts(self) -> dict[str, int]:
        row = self._one(
            "SELECT "
            "(SELECT count(*) FROM memdir_files WHERE workspace_id = %(ws)s), "
            "(SELECT count(*) FROM memdir_chunks WHERE workspace_id = %(ws)s), "
            "(SELECT count(*) FROM memdir_vectors WHERE workspace_id = %(ws)s), "
            "(SELECT count(*) FROM memdir_chunks c WHERE c.workspace_id = %(ws)s "
            " AND c.embeddable AND NOT EXISTS "
            " (SELECT 1 FROM memdir_vectors v WHERE v.seq = c.seq)), "
            "(SELECT count(*) FROM memdir_embedding_cache WHERE workspace_id = %(ws)s), "
            "(SELECT count(*) FROM memdir_companion WHERE workspace_id = %(ws)s)",
            {"ws": self.workspace_id},
        )
        keys = (
            "files",
            "chunks",
            "vectors",
            "pending_vectors",
            "cached_embeddings",
            "companion_codes",
        )
        return {key: int(value) for key, value in zip(keys, row, strict=True)}

    def file_mtimes(self, *, source: str) -> dict[str, float]:
        rows = self.conn.execute(
            "SELECT f.path, coalesce(s.mtime_ns, f.mtime_ns) FROM memdir_files f "
            "LEFT JOIN memdir_copies s ON s.workspace_id = f.workspace_id "
            "AND s.path = f.path AND s.host = %s WHERE f.workspace_id = %s AND f.source = %s",
            (self.host, self.workspace_id, source),
        )
        return {str(p): int(m) / 1e9 for p, m in rows if m >= 0}

    def file_warnings(self) -> dict[str, str]:
        rows = self.conn.execute(
            "SELECT path, warning FROM memdir_files WHERE workspace_id = %s "
            "AND warning IS NOT NULL",
            (self.workspace_id,),
        )
        return {str(p): str(w) for p, w in rows}

    # -- embedding cache ----------------------------------------------------------------

    def cache_get(
        self, provider: str, model: str, provider_key: str, hashes: Sequence[str]
    ) -> dict[str, Vectors]:
        if not hashes:
            return {}
        rows = self.conn.execute(
            "SELECT hash, embedding FROM memdir_embedding_cache WHERE workspace_id = %s "
            "AND provider = %s AND model = %s AND provider_key = %s AND hash = ANY(%s)",
            (self.workspace_id, provider, model, provider_key, list(dict.fromkeys(hashes))),
        )
        return {str(h): _to_numpy(v) for h, v in rows}

    def cache_put(
        self, provider: str, model: str, provider_key: str, items: Sequence[tuple[str, Vectors]]
    ) -> None:
        latest = dict(items)  # one row per hash; a repeated hash keeps its last vector
        with self.write() as conn:
            self._changes().changed = True  # the cache size is part of counts()
            for dims in sorted({int(v.shape[-1]) for v in latest.values()}):
                group = [(h, v) for h, v in latest.items() if int(v.shape[-1]) == dims]
                conn.execute(
                    "INSERT INTO memdir_embedding_cache(workspace_id, provider, model, "
                    "provider_key, hash, dims, embedding, created_at) "
                    "SELECT %s, %s, %s, %s, u.hash, %s, u.embedding, %s "
                    "FROM unnest(%s::text[], %s::vector[]) AS u(hash, embedding) "
                    "ON CONFLICT (workspace_id, provider, model, provider_key, hash) DO UPDATE "
                    "SET dims = excluded.dims, embedding = excluded.embedding, "
                    "created_at = excluded.created_at",
                    (
                        self.workspace_id,
                        provider,
                        model,
                        provider_key,
                        dims,
                        time.time(),
                        [h for h, _ in group],
                        [np.asarray(v, dtype=np.float32) for _, v in group],
                    ),
                )

    # -- the whole workspace ------------------------------------------------------------

    def clear(self) -> None:
        """Delete the workspace's files, chunks, vectors, terms and meta, keeping its
        embedding cache (a rebuild is seeded from it). Call inside :meth:`write`."""
        ws = (self.workspace_id,)
        for table in (
            "memdir_chunks",
            "memdir_copies",
            "memdir_files",
            "memdir_terms",
            "memdir_meta",
        ):
            self.conn.execute(f"DELETE FROM {table} WHERE workspace_id = %s", ws)
        self.conn.execute(
            "UPDATE memdir_workspaces SET chunk_count = 0, token_total = 0 WHERE workspace_id = %s",
            ws,
        )
        self._changes().changed = True
        self._fresh = set()
        for pending in self._pending:  # whatever was counted before is gone too
            pending.terms.clear()
            pending.chunks = pending.tokens = 0

    def drop_workspace(self) -> None:
        """Delete every row of this workspace, its embedding cache included."""
        with self.write() as conn:
            self.clear()
            for table in ("memdir_embedding_cache", "memdir_companion"):
                conn.execute(f"DELETE FROM {table} WHERE workspace_id = %s", (self.workspace_id,))
        self.conn.execute(
            "DELETE FROM memdir_workspaces WHERE workspace_id = %s", (self.workspace_id,)
        )
