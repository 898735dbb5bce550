"""Keyword search of :class:`~memdir.index.sqlite.store.SqliteStore`: FTS5 candidates and the
statistics memdir's BM25 (:mod:`memdir.index.bm25`) needs (docs/design.md#keyword-search).

A :class:`~memdir.index.base.KeywordQuery` becomes an FTS5 MATCH expression here and nowhere
else (:func:`fts5_match`): every term double-quoted, so ``"``, ``*``, ``NEAR(``, ``AND`` and
``-`` in a term are ordinary characters.

Candidates are the matching rows pre-ranked by FTS5's own ``bm25()`` (about twice as many as
asked); memdir's BM25 then scores every candidate exactly from its stored tokens.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping, Sequence

from memdir.index.base import CorpusStats, KeywordQuery
from memdir.index.sqlite.meta import SqliteMeta

#: KeywordQuery.mode → the FTS5 operator between terms.
_FTS5_OPERATORS = {"or": "OR", "and": "AND"}


#: At most this many rows are pre-ranked by FTS5 for one ``or`` query (see
#: ``SqliteKeywordSearch.keyword_candidates``). At 10,000 generated files (482,179 chunks, 20
#: queries) the candidates took p50 12 / 21 / 55 / 214 ms and kept 0.53 / 0.68 / 0.76 / 0.82
#: of exact BM25's top 24 with a budget of 20,000 / 50,000 / 100,000 / no limit
#: (docs/benchmarks.md#big-vaults-issue-17).
SCAN_BUDGET = 50_000
#: Document frequencies kept between writes (a long-running server asks many terms).
DF_MEMO_TERMS = 4096


def fts5_match(query: KeywordQuery, terms: Iterable[str] | None = None) -> str:
    """The FTS5 MATCH expression of ``query`` (or of some of its ``terms``, same operator):
    each term quoted, joined with ``OR`` or ``AND``."""
    chosen = query.terms if terms is None else terms
    return f" {_FTS5_OPERATORS[query.mode]} ".join(_quoted(term) for term in chosen)


def _quoted(term: str) -> str:
    """``term`` as an FTS5 string: double-quoted, ``"`` doubled. FTS5 ends a string at NUL, so
    a NUL becomes U+FFFD (memdir's tokenizers never produce one)."""
    return '"' + term.replace('"', '""').replace("\x00", "\ufffd") + '"'


def deflate_text(text: str) -> bytes:
    """A chunk's text or space-joined tokens as stored (raw deflate: ~2/3 of the text)."""
    packer = zlib.compressobj(6, zlib.DEFLATED, -15)
    return packer.compress(text.encode("utf-8")) + packer.flush()


def inflate_text(blob: bytes) -> str:
    """The inverse of :func:`deflate_text`."""
    return zlib.decompress(blob, -15).decode("utf-8")


class SqliteKeywordSearch(SqliteMeta):
    """The keyword-search methods of :class:`~memdir.index.sqlite.store.SqliteStore`
    (a mixin: it reads the store's ``conn`` and counters)."""

    #: (index generation, document frequencies read at it): see document_frequencies.
    _df_memo: tuple[int, dict[str, int]] = (-1, {})

    # -- search -------------------------------------------------------------------------

    def keyword_candidates(
        self, query: KeywordQuery, idf: Mapping[str, float], limit: int, stats: CorpusStats
    ) -> list[tuple[int, str]]:
        """``(seq, tokens)`` of about ``limit`` chunks that FTS5's ``bm25()`` ranks best for
        ``query``, pre-ranking at most :data:`SCAN_BUDGET` rows (``idf`` and ``stats`` are not
        needed: memdir's BM25 re-scores them).

        FTS5 computes ``bm25()`` for every row a MATCH finds before it sorts, so a query with a
        term found in a third of a big vault's chunks costs hundreds of milliseconds. When the
        query's terms are found in more rows than the budget together (``or`` queries only),
        the rarest terms that fit in it choose the rows and all the terms rank them (MaxScore's
        argument: a chunk holding only the common terms scores at most Σ idf·(k1+1) of their
        low IDFs); if they find fewer than ``limit``, the newest chunks holding the common
        terms (all of them first, then each, rarest first) fill up.
        """
        if limit <= 0:
            return []
        df = self.document_frequencies(query.terms)
        if query.mode == "and" or sum(df.values()) <= SCAN_BUDGET:
            return self.stored_tokens(self._fts_ranked(fts5_match(query), limit))
        ordered = sorted(query.terms, key=lambda t: (df.get(t, 0), t))
        rare: list[str] = []
        total = 0
        for term in ordered:
            if total + df.get(term, 0) > SCAN_BUDGET:
                break
            rare.append(term)
            total += df.get(term, 0)
        common = ordered[len(rare) :]
        seqs = (
            self._fts_ranked(f"({fts5_match(query, rare)}) AND ({fts5_match(query)})", limit)
            if rare
            else []
        )
        fills = [" AND ".join(_quoted(t) for t in common)] if len(common) > 1 else []
        fills += [_quoted(t) for t in common]
        seen = set(seqs)
        for match in fills:
            if len(seqs) >= limit:
                break
            rows = self.conn.execute(
                "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rowid DESC LIMIT ?",
                (match, limit),
            )
            for (seq,) in rows:
                if seq not in seen and len(seqs) < limit:
                    seen.add(seq)
                    seqs.append(int(seq))
        return self.stored_tokens(seqs)

    def _fts_ranked(self, match: str, limit: int) -> list[int]:
        rows = self.conn.execute(
            "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY bm25(chunks_fts) "
            "LIMIT ?",
            (match, limit),
        )
        return [int(seq) for (seq,) in rows]

    def stored_tokens(self, seqs: Sequence[int]) -> list[tuple[int, str]]:
        """``(seq, space-joined tokens)`` of these chunks, in the order given (gone ones left
        out)."""
        found: dict[int, str] = {}
        for start in range(0, len(seqs), 500):
            part = [int(s) for s in seqs[start : start + 500]]
            marks = ",".join("?" * len(part))
            for seq, blob in self.conn.execute(
                f"SELECT seq, tokens FROM chunks WHERE seq IN ({marks})", part
            ):
                found[int(seq)] = inflate_text(blob)
        return [(seq, found[seq]) for seq in seqs if seq in found]

    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        """Chunks containing each term, from the ``chunks_vocab`` fts5vocab table, which counts
        them by reading the term's postings (~10 ms for a term in 180,000 chunks): the last
        terms' counts are kept until the next write."""
        wanted = list(dict.fromkeys(terms))
        if not wanted:
            return {}
        generation = self.generation()
        if self._df_memo[0] != generation:
            self._df_memo = (generation, {})
        known = self._df_memo[1]
        if len(known) > DF_MEMO_TERMS:
            known.clear()  # before looking, so that every wanted term is then in it
        missing = [t for t in wanted if t not in known]
        if missing:
            marks = ",".join("?" * len(missing))
            rows = self.conn.execute(
                f"SELECT term, doc FROM chunks_vocab WHERE term IN ({marks})", missing
            )
            known.update(dict.fromkeys(missing, 0))
            known.update({str(term): int(docs) for term, docs in rows})
        return {t: known[t] for t in wanted if known[t] > 0}

    def corpus_stats(self) -> CorpusStats:
        """Number of chunks and their mean token count (from the counters)."""
        chunks = self.counter("chunks")
        return CorpusStats(chunks, self.counter("tokens") / chunks if chunks else 0.0)

    def own_keyword_ranking(self, query: KeywordQuery, limit: int) -> list[tuple[int, float]]:
        """``(seq, bm25 rank)`` by FTS5's own ``bm25()``, best (most negative) first: the
        :class:`~memdir.index.base.OwnKeywordRanking` of the ``plain`` tokenizer."""
        rows = self.conn.execute(
            "SELECT rowid, bm25(chunks_fts) AS r FROM chunks_fts WHERE chunks_fts MATCH ? "
            "ORDER BY r LIMIT ?",
            (fts5_match(query), limit),
        ).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]
