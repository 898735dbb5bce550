"""Keyword search of :class:`~memdir.index.sqlite.store.SqliteStore`: FTS5 candidates and the
statistics memdir's BM25 (:mod:`memdir.index.bm25`) needs, from ``chunks_fts`` and its
``chunks_vocab`` fts5vocab table."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence

from memdir.index.base import CorpusStats


class SqliteKeywordSearch:
    """The keyword-search methods of :class:`~memdir.index.sqlite.store.SqliteStore`
    (a mixin: it reads the store's ``conn``)."""

    conn: sqlite3.Connection

    # -- keyword search ---------------------------------------------------------------------

    def keyword_candidates(
        self, match: str, idf: Mapping[str, float], limit: int, stats: CorpusStats
    ) -> list[tuple[int, str]]:
        """``(seq, tokens)`` of the FTS5 ``match`` rows, pre-ranked by FTS5's ``bm25()``
        (``idf`` and ``stats`` are not needed: FTS5 has its own)."""
        rows = self.conn.execute(
            "SELECT rowid, tokens FROM chunks_fts WHERE chunks_fts MATCH ? "
            "ORDER BY bm25(chunks_fts) LIMIT ?",
            (match, limit),
        ).fetchall()
        return [(int(seq), str(tokens)) for seq, tokens in rows]

    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        """Chunks containing each term, from the ``chunks_vocab`` fts5vocab table."""
        wanted = list(dict.fromkeys(terms))
        if not wanted:
            return {}
        marks = ",".join("?" * len(wanted))
        rows = self.conn.execute(
            f"SELECT term, doc FROM chunks_vocab WHERE term IN ({marks})", wanted
        )
        return {str(term): int(docs) for term, docs in rows}

    def corpus_stats(self) -> CorpusStats:
        """Number of chunks and their mean token count."""
        count, avg = self.conn.execute("SELECT count(*), avg(token_count) FROM chunks").fetchone()
        return CorpusStats(int(count), float(avg or 0.0))

    def keyword_search(self, match: str, limit: int) -> list[tuple[int, float]]:
        """``(seq, bm25 rank)`` for an FTS5 MATCH expression, best (most negative) first."""
        rows = self.conn.execute(
            "SELECT rowid, bm25(chunks_fts) AS r FROM chunks_fts WHERE chunks_fts MATCH ? "
            "ORDER BY r LIMIT ?",
            (match, limit),
        ).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]
