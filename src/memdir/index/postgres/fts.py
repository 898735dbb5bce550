"""Keyword search of :class:`~memdir.index.postgres.store.PostgresStore`: the candidate
pre-ranking SQL (BM25 at tf = 1) and the per-workspace term table (document frequencies)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memdir.index.base import CorpusStats, KeywordQuery
from memdir.index.bm25 import K1, B
from memdir.index.postgres.schema import WorkspaceRows

#: The rare query terms may bring at most this many rows to pre-rank (see ``_candidates``).
SCAN_CAP = 2000


def _tsquery_lexeme(term: str) -> str:
    """One lexeme in tsquery syntax: single-quoted, ``\\`` escaped and ``'`` doubled."""
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


class PostgresKeywordSearch(WorkspaceRows):
    """The keyword-search methods of :class:`~memdir.index.postgres.store.PostgresStore`
    (a mixin: it reads the store's ``conn`` and ``workspace_id``)."""

    # -- keyword search -----------------------------------------------------------------

    def keyword_candidates(
        self, query: KeywordQuery, idf: Mapping[str, float], limit: int, stats: CorpusStats
    ) -> list[tuple[int, str]]:
        """Rows whose lexemes match ``query``, pre-ranked by BM25 with every tf taken as 1."""
        return [(seq, tokens) for seq, tokens, _ in self._candidates(query, idf, limit, stats)]

    def _candidates(
        self, query: KeywordQuery, idf: Mapping[str, float], limit: int, stats: CorpusStats
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
        terms = list(query.terms)
        if limit <= 0:
            return []
        df = self.document_frequencies(terms)
        rare: list[str] = []
        total = 0
        for term in sorted(terms, key=lambda t: (df.get(t, 0), t)):
            if query.mode == "and" or (total < limit and total + df.get(term, 0) <= SCAN_CAP):
                rare.append(term)
                total += df.get(term, 0)
        common = [t for t in sorted(terms, key=lambda t: (df.get(t, 0), t)) if t not in rare]
        glue = " | " if query.mode == "or" else " & "
        rows: dict[int, tuple[int, str, float]] = {}
        if rare:
            for row in self._ranked(
                rare if query.mode == "or" else terms,
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
        tsquery = glue.join(_tsquery_lexeme(t) for t in match_terms)
        found = self.conn.execute(
            f"SELECT seq, tokens, ({present}) * {K1 + 1} / "
            f"(1 + {K1} * ({1 - B} + {B} * token_count / %s::float8)) AS proxy "
            "FROM memdir_chunks WHERE workspace_id = %s AND tsv @@ %s::tsquery "
            f"ORDER BY {order} LIMIT %s",
            [*params, avg, self.workspace_id, tsquery, limit],
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
