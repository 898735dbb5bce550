"""One workspace's rows in PostgreSQL: the :class:`~memdir.index.base.IndexBackend` of
:mod:`memdir.index.postgres` (tables and search strategy described there)."""

from __future__ import annotations

import contextlib
import math
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memdir.embeddings.base import Vectors
from memdir.index.base import ChunkRow, CorpusStats, FileRow, NewChunk, parse_match
from memdir.index.postgres.schema import (
    EXACT_SEARCH_MAX,
    HNSW_MAX_DIMS,
    advisory_key,
    connect,
)

#: ``hnsw.ef_search`` for a query asking for ``k`` neighbours: max(this, 2k), at most 1000.
#: Measured on 17,643 real USE vectors (docs/benchmarks-postgres.md): recall@10 0.93 at 64,
#: 0.95 at 100, 0.99 at 200, for 1.5 / 2.3 / 5.0 ms.
EF_SEARCH_MIN = 200
_K1, _B = 1.2, 0.75  # memdir.index.fts's BM25 constants, for the SQL pre-ranking
#: The rare query terms may bring at most this many rows to pre-rank (see ``_candidates``).
SCAN_CAP = 2000


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


def _tsquery_lexeme(term: str) -> str:
    """One lexeme in tsquery syntax: single-quoted, ``\\`` escaped and ``'`` doubled."""
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def _pg_text(text: str) -> str:
    """PostgreSQL text cannot hold NUL: store U+FFFD instead (SQLite keeps the NUL)."""
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


def _to_numpy(value: Any) -> Vectors:
    array = value.to_numpy() if hasattr(value, "to_numpy") else value
    return np.asarray(array, dtype=np.float32)


def _lucene_idf(documents: int, df: int) -> float:
    return math.log(1.0 + (documents - df + 0.5) / (df + 0.5))


class PostgresStore:
    """One workspace's index in a PostgreSQL database.

    Args:
        conn: a psycopg connection from :func:`memdir.index.postgres.connect` (autocommit).
        workspace_id: whose rows this store reads and writes.
        host: who looks at the files (``hostname:state folder``), for ``memdir_file_seen``.
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

    def _one(self, query: str, params: Sequence[Any] | Mapping[str, Any]) -> Any:
        return self.conn.execute(query, params).fetchone()

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

    def file_rows(self) -> dict[str, FileRow]:
        """The files this host has indexed or checked, with the (mtime, size) it saw."""
        rows = self.conn.execute(
            "SELECT f.path, f.source, f.hash, s.mtime_ns, s.size, f.warning "
            "FROM memdir_files f JOIN memdir_file_seen s ON s.workspace_id = f.workspace_id "
            "AND s.path = f.path AND s.host = %s WHERE f.workspace_id = %s",
            (self.host, self.workspace_id),
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
        """Replace everything indexed for ``path`` in one transaction."""
        now = time.time()
        with self.write() as conn:
            self._delete_chunks([path])
            conn.execute(
                "INSERT INTO memdir_files(workspace_id, path, source, hash, mtime_ns, size, "
                "indexed_at, warning) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (workspace_id, path) DO UPDATE SET source = excluded.source, "
                "hash = excluded.hash, mtime_ns = excluded.mtime_ns, size = excluded.size, "
                "indexed_at = excluded.indexed_at, warning = excluded.warning",
                (self.workspace_id, path, source, hash, mtime_ns, size, now, warning),
            )
            self._seen(path, mtime_ns, size)
            seq_of = self._insert_chunks(path, source, model, now, chunks)
            self._insert_vectors(
                [
                    (seq_of[c.id], c.embedding)
                    for c in {c.id: c for c in chunks}.values()  # one id, one content
                    if c.embedding is not None and c.id in seq_of
                ]
            )

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

    def _seen(self, path: str, mtime_ns: int, size: int) -> None:
        self.conn.execute(
            "INSERT INTO memdir_file_seen(workspace_id, host, path, mtime_ns, size) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (workspace_id, host, path) "
            "DO UPDATE SET mtime_ns = excluded.mtime_ns, size = excluded.size",
            (self.workspace_id, self.host, path, mtime_ns, size),
        )

    def _delete_chunks(self, paths: list[str]) -> None:
        """Delete the chunks of ``paths`` (their vectors cascade) and count what left."""
        if self._fresh is not None:
            paths = [p for p in paths if p in self._fresh]
            if not paths:
                return
        rows = self.conn.execute(
            "WITH gone AS (DELETE FROM memdir_chunks WHERE workspace_id = %s "
            "AND path = ANY(%s) RETURNING tsv, token_count) "
            "SELECT NULL, count(*), coalesce(sum(token_count), 0) FROM gone "
            "UNION ALL SELECT t.lexeme, count(*), 0 FROM gone, unnest(gone.tsv) AS t "
            "GROUP BY t.lexeme",
            (self.workspace_id, paths),
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

    def touch_file(self, path: str, mtime_ns: int, size: int) -> None:
        """Record the (mtime, size) this host sees for an unchanged file."""
        with self.write():
            self._seen(path, mtime_ns, size)

    def delete_files(self, paths: Iterable[str]) -> int:
        wanted = list(dict.fromkeys(paths))
        if not wanted:
            return 0
        with self.write() as conn:
            self._delete_chunks(wanted)
            removed = int(
                conn.execute(
                    "DELETE FROM memdir_files WHERE workspace_id = %s AND path = ANY(%s)",
                    (self.workspace_id, wanted),
                ).rowcount
            )
            if removed:
                self._changes().changed = True
        return removed

    def chunks_without_vectors(self, limit: int = 10_000) -> list[tuple[int, str, str]]:
        rows = self.conn.execute(
            "SELECT c.seq, c.hash, c.text FROM memdir_chunks c WHERE c.workspace_id = %s "
            "AND c.embeddable AND NOT EXISTS (SELECT 1 FROM memdir_vectors v "
            "WHERE v.seq = c.seq) ORDER BY c.seq LIMIT %s",
            (self.workspace_id, limit),
        ).fetchall()
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    def set_vectors(self, items: Sequence[tuple[int, Vectors]]) -> None:
        with self.write():
            self._insert_vectors(items, upsert=True)

    def chunks_by_seq(self, seqs: Sequence[int]) -> dict[int, ChunkRow]:
        if not seqs:
            return {}
        rows = self.conn.execute(
            "SELECT seq, id, path, source, start_line, end_line, text FROM memdir_chunks "
            "WHERE workspace_id = %s AND seq = ANY(%s)",
            (self.workspace_id, [int(s) for s in seqs]),
        ).fetchall()
        return {int(r[0]): ChunkRow(int(r[0]), *r[1:]) for r in rows}

    def counts(self) -> dict[str, int]:
        row = self._one(
            "SELECT "
            "(SELECT count(*) FROM memdir_files WHERE workspace_id = %(ws)s), "
            "(SELECT count(*) FROM memdir_chunks WHERE workspace_id = %(ws)s), "
            "(SELECT count(*) FROM memdir_vectors WHERE workspace_id = %(ws)s), "
            "(SELECT count(*) FROM memdir_chunks c WHERE c.workspace_id = %(ws)s "
            " AND c.embeddable AND NOT EXISTS "
            " (SELECT 1 FROM memdir_vectors v WHERE v.seq = c.seq)), "
            "(SELECT count(*) FROM memdir_embedding_cache WHERE workspace_id = %(ws)s)",
            {"ws": self.workspace_id},
        )
        keys = ("files", "chunks", "vectors", "pending_vectors", "cached_embeddings")
        return {key: int(value) for key, value in zip(keys, row, strict=True)}

    def file_mtimes(self, *, source: str) -> dict[str, float]:
        rows = self.conn.execute(
            "SELECT f.path, coalesce(s.mtime_ns, f.mtime_ns) FROM memdir_files f "
            "LEFT JOIN memdir_file_seen s ON s.workspace_id = f.workspace_id "
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

    # -- keyword search -----------------------------------------------------------------

    def keyword_candidates(
        self, match: str, idf: Mapping[str, float], limit: int, stats: CorpusStats
    ) -> list[tuple[int, str]]:
        """Rows whose lexemes match ``match``, pre-ranked by BM25 with every tf taken as 1."""
        return [(seq, tokens) for seq, tokens, _ in self._candidates(match, idf, limit, stats)]

    def _candidates(
        self, match: str, idf: Mapping[str, float], limit: int, stats: CorpusStats
    ) -> list[tuple[int, str, float]]:
        """Candidates and their pre-rank score, visiting few rows even for common terms.

        The rarest terms (by document frequency, together at most :data:`SCAN_CAP` rows)
        give their every matching row, pre-ranked by BM25 at tf = 1 over *all* query terms.
        Only when they give fewer than ``limit`` rows do the commoner terms, rarest first, add
        their shortest matching rows (``ORDER BY token_count`` on an index: a few rows read,
        not all of them). A chunk holding only common terms scores at most Σ idf·(k1+1) of
        those low IDFs, so it rarely belongs in the top ``limit`` when rarer matches exist
        (MaxScore's argument); memdir's BM25 then re-scores the candidates exactly.
        """
        terms, joiner = parse_match(match)
        terms = [t for t in dict.fromkeys(terms) if t]
        if not terms or limit <= 0:
            return []
        df = self.document_frequencies(terms)
        rare: list[str] = []
        total = 0
        for term in sorted(terms, key=lambda t: (df.get(t, 0), t)):
            if joiner == "AND" or (total < limit and total + df.get(term, 0) <= SCAN_CAP):
                rare.append(term)
                total += df.get(term, 0)
        common = [t for t in sorted(terms, key=lambda t: (df.get(t, 0), t)) if t not in rare]
        glue = " | " if joiner == "OR" else " & "
        rows: dict[int, tuple[int, str, float]] = {}
        if rare:
            for row in self._ranked(
                rare if joiner == "OR" else terms,
                glue,
                terms,
                idf,
                stats,
                limit,
                order="proxy DESC, seq",
            ):
                rows[row[0]] = row
        for term in common:  # rarest first
            if len(rows) >= limit:
                break
            for row in self._ranked(
                [term], glue, terms, idf, stats, limit, order="token_count, seq"
            ):
                rows.setdefault(row[0], row)
        ranked = sorted(rows.values(), key=lambda r: (-r[2], r[0]))
        return ranked[:limit]

    def _ranked(
        self,
        match_terms: Sequence[str],
        glue: str,
        terms: Sequence[str],
        idf: Mapping[str, float],
        stats: CorpusStats,
        limit: int,
        *,
        order: str,
    ) -> list[tuple[int, str, float]]:
        """Rows matching ``match_terms`` (joined by ``glue``) in ``order``, with their BM25 at
        tf = 1 over all ``terms``: Σ idf(t)·[t ∈ d] · (k1+1) / (1 + k1·(1 − b + b·|d|/avgdl))."""
        present = " + ".join(["%s::float8 * (tsv @@ %s::tsquery)::int"] * len(terms))
        params: list[Any] = []
        for term in terms:
            params += [idf.get(term, 1.0), _tsquery_lexeme(term)]
        avg = stats.avg_length if stats.avg_length > 0 else 1.0
        query = glue.join(_tsquery_lexeme(t) for t in match_terms)
        found = self.conn.execute(
            f"SELECT seq, tokens, ({present}) * {_K1 + 1} / "
            f"(1 + {_K1} * ({1 - _B} + {_B} * token_count / %s::float8)) AS proxy "
            "FROM memdir_chunks WHERE workspace_id = %s AND tsv @@ %s::tsquery "
            f"ORDER BY {order} LIMIT %s",
            [*params, avg, self.workspace_id, query, limit],
        ).fetchall()
        return [(int(r[0]), str(r[1]), float(r[2])) for r in found]

    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        wanted = list(dict.fromkeys(terms))
        if not wanted:
            return {}
        rows = self.conn.execute(
            "SELECT term, df FROM memdir_terms WHERE workspace_id = %s AND term = ANY(%s)",
            (self.workspace_id, wanted),
        )
        return {str(term): int(df) for term, df in rows if df > 0}

    def corpus_stats(self) -> CorpusStats:
        row = self._one(
            "SELECT chunk_count, token_total FROM memdir_workspaces WHERE workspace_id = %s",
            (self.workspace_id,),
        )
        count, total = (int(row[0]), int(row[1])) if row else (0, 0)
        return CorpusStats(count, total / count if count else 0.0)

    def keyword_search(self, match: str, limit: int) -> list[tuple[int, float]]:
        """``(seq, −pre-rank score)``: the SQL pre-ranking alone (negative: lower is better)."""
        terms, _ = parse_match(match)
        stats = self.corpus_stats()
        df = self.document_frequencies(terms)
        idf = {t: _lucene_idf(stats.documents, df.get(t, 0)) for t in terms}
        return [(seq, -score) for seq, _, score in self._candidates(match, idf, limit, stats)]

    # -- vectors ------------------------------------------------------------------------

    def all_vectors(self) -> tuple[np.ndarray, Vectors]:
        rows = self.conn.execute(
            "SELECT seq, embedding FROM memdir_vectors WHERE workspace_id = %s ORDER BY seq",
            (self.workspace_id,),
        ).fetchall()
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        seqs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        return seqs, np.stack([_to_numpy(r[1]) for r in rows])

    def nearest(
        self, query: Vectors, k: int, *, exact: bool | None = None, ef_search: int | None = None
    ) -> list[tuple[int, float]]:
        """``(seq, cosine similarity)`` of the ``k`` nearest vectors, best first.

        Args:
            exact: force exact search (True) or the HNSW index (False); by default exact
                while the workspace has at most :data:`EXACT_SEARCH_MAX` vectors.
            ef_search: the HNSW candidate list size; default max(:data:`EF_SEARCH_MIN`, 2k).
        """
        dims = int(query.shape[-1])
        if k <= 0 or dims <= 0:
            return []
        vec = np.asarray(query, dtype=np.float32)
        if exact is None:
            exact = dims > HNSW_MAX_DIMS or self._few_vectors(dims)
        if not exact:
            ef = ef_search or min(1000, max(EF_SEARCH_MIN, 2 * k))
            rows = self._hnsw(vec, dims, k, ef)
            if len(rows) >= k:
                return rows
        # ``embedding <=> q`` does not match the HNSW index's expression: an exact scan.
        found = self.conn.execute(
            "SELECT seq, 1 - (embedding <=> %s) FROM memdir_vectors "
            f"WHERE workspace_id = %s AND dims = {dims} ORDER BY embedding <=> %s, seq LIMIT %s",
            (vec, self.workspace_id, vec, k),
        ).fetchall()
        return [(int(r[0]), float(r[1])) for r in found]

    def _few_vectors(self, dims: int) -> bool:
        row = self._one(
            "SELECT count(*) FROM (SELECT 1 FROM memdir_vectors WHERE workspace_id = %s "
            f"AND dims = {dims} LIMIT {EXACT_SEARCH_MAX + 1}) AS s",
            (self.workspace_id,),
        )
        return int(row[0]) <= EXACT_SEARCH_MAX

    def _hnsw(self, vec: Vectors, dims: int, k: int, ef: int) -> list[tuple[int, float]]:
        cast = f"vector({dims})"
        with self.conn.transaction():
            # set_config(..., true) lasts for this transaction only (SET LOCAL).
            self.conn.execute(
                "SELECT set_config('hnsw.ef_search', %s, true), "
                "set_config('hnsw.iterative_scan', 'strict_order', true)",
                (str(ef),),
            )
            rows = self.conn.execute(
                f"SELECT seq, 1 - (embedding::{cast} <=> %s::{cast}) FROM memdir_vectors "
                f"WHERE workspace_id = %s AND dims = {dims} "
                f"ORDER BY embedding::{cast} <=> %s::{cast} LIMIT %s",
                (vec, self.workspace_id, vec, k),
            ).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]

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
        for table in ("memdir_chunks", "memdir_files", "memdir_terms", "memdir_meta"):
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
            conn.execute(
                "DELETE FROM memdir_embedding_cache WHERE workspace_id = %s", (self.workspace_id,)
            )
        self.conn.execute(
            "DELETE FROM memdir_workspaces WHERE workspace_id = %s", (self.workspace_id,)
        )
