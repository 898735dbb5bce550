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


def fts5_match(query: KeywordQuery, terms: Iterable[str] | None = None) -> str:
    """The FTS5 MATCH expression of ``query`` (or of some of its ``terms``, same operator):
    each term quoted (``"`` doubled), joined with ``OR`` or ``AND``. FTS5 ends a string at NUL,
    so a NUL in a term becomes U+FFFD (memdir's tokenizers never produce one)."""
    chosen = query.terms if terms is None else terms
    quoted = ['"' + term.replace('"', '""').replace("\x00", "\ufffd") + '"' for term in chosen]
    return f" {_FTS5_OPERATORS[query.mode]} ".join(quoted)


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

    # -- search -------------------------------------------------------------------------

    def keyword_candidates(
        self, query: KeywordQuery, idf: Mapping[str, float], limit: int, stats: CorpusStats
    ) -> list[tuple[int, str]]:
        """``(seq, tokens)`` of the ``limit`` chunks FTS5's ``bm25()`` ranks best for
        ``query`` (``idf`` and ``stats`` are not needed: memdir's BM25 re-scores them)."""
        if limit <= 0:
            return []
        return self.stored_tokens(self._fts_ranked(fts5_match(query), limit))

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
