"""Keyword search of :class:`~memdir.index.sqlite.store.SqliteStore`: FTS5 candidates and the
statistics memdir's BM25 (:mod:`memdir.index.bm25`) needs, from ``chunks_fts`` and its
``chunks_vocab`` fts5vocab table.

A :class:`~memdir.index.base.KeywordQuery` becomes an FTS5 MATCH expression here and nowhere
else (:func:`fts5_match`): every term double-quoted, so ``"``, ``*``, ``NEAR(``, ``AND`` and
``-`` in a term are ordinary characters.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence

from memdir.index.base import CorpusStats, KeywordQuery

#: KeywordQuery.mode → the FTS5 operator between terms.
_FTS5_OPERATORS = {"or": "OR", "and": "AND"}


def fts5_match(query: KeywordQuery) -> str:
    """The FTS5 MATCH expression of ``query``: each term quoted (``"`` doubled), joined with
    ``OR`` or ``AND``. FTS5 ends a string at NUL, so a NUL in a term becomes U+FFFD (memdir's
    tokenizers never produce one)."""
    quoted = ['"' + term.replace('"', '""').replace("\x00", "\ufffd") + '"' for term in query.terms]
    return f" {_FTS5_OPERATORS[query.mode]} ".join(quoted)


class SqliteKeywordSearch:
    """The keyword-search methods of :class:`~memdir.index.sqlite.store.SqliteStore`
    (a mixin: it reads the store's ``conn``)."""

    conn: sqlite3.Connection

    def keyword_candidates(
        self, query: KeywordQuery, idf: Mapping[str, float], limit: int, stats: CorpusStats
    ) -> list[tuple[int, str]]:
        """``(seq, tokens)`` of the rows FTS5 matches, pre-ranked by FTS5's ``bm25()``
        (``idf`` and ``stats`` are not needed: FTS5 has its own)."""
        rows = self.conn.execute(
            "SELECT rowid, tokens FROM chunks_fts WHERE chunks_fts MATCH ? "
            "ORDER BY bm25(chunks_fts) LIMIT ?",
            (fts5_match(query), limit),
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

    def own_keyword_ranking(self, query: KeywordQuery, limit: int) -> list[tuple[int, float]]:
        """``(seq, bm25 rank)`` by FTS5's own ``bm25()``, best (most negative) first: the
        :class:`~memdir.index.base.OwnKeywordRanking` of the ``plain`` tokenizer."""
        rows = self.conn.execute(
            "SELECT rowid, bm25(chunks_fts) AS r FROM chunks_fts WHERE chunks_fts MATCH ? "
            "ORDER BY r LIMIT ?",
            (fts5_match(query), limit),
        ).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]
