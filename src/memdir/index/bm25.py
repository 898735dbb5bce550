"""memdir's BM25, the one keyword scoring of every engine: the engine finds the candidates,
this module scores them (and holds the constants and the IDF; engines that pre-rank in their
own query language import them from here).

FTS5's own ``bm25()`` uses an IDF that collapses to ~0 when a term is in half the documents or
more, so in a small workspace (a handful of notes) every keyword score is near zero. memdir
computes BM25 itself with the Lucene IDF ``ln(1 + (N − df + 0.5) / (df + 0.5))``, which stays
positive at any corpus size, and k1 = 1.2, b = 0.75:

    bm25(d, q) = Σ_t idf(t) · tf(t, d)·(k1 + 1) / (tf(t, d) + k1·(1 − b + b·|d| / avgdl))

Term frequencies come from the stored tokens (memdir's own tokenizer wrote them, so they are
exactly the engine's terms), document frequencies and corpus statistics from the store
(:class:`memdir.index.base.IndexBackend`: SQLite's ``chunks_vocab`` fts5vocab table, a term table
on Postgres). The engines differ only in how they pre-rank candidates: FTS5 by its own
``bm25()``, Postgres by this BM25 with every term frequency taken as 1; both then hand
``limit × PREFETCH`` rows to :func:`bm25_search`, which scores them identically.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

from memdir.index.base import CorpusStats, IndexBackend, KeywordQuery

K1 = 1.2
B = 0.75
#: The engine pre-ranks this many times more candidates than asked, before memdir re-scores.
PREFETCH = 2

__all__ = [
    "K1",
    "PREFETCH",
    "B",
    "CorpusStats",
    "bm25_document",
    "bm25_search",
    "bm25_term",
    "bm25_to_score",
    "corpus_stats",
    "idf_from_df",
    "lucene_idf",
    "term_idf",
]


def corpus_stats(store: IndexBackend) -> CorpusStats:
    """Number of chunks and their mean token count."""
    return store.corpus_stats()


def lucene_idf(documents: int, df: int) -> float:
    """``ln(1 + (N − df + 0.5) / (df + 0.5))``: positive for any df ≤ N."""
    return math.log(1.0 + (documents - df + 0.5) / (df + 0.5))


def bm25_term(tf: int, length: int, avg_length: float, idf: float) -> float:
    """One term's BM25 contribution."""
    if tf <= 0:
        return 0.0
    norm = 1.0 - B + B * (length / avg_length if avg_length > 0 else 1.0)
    return idf * tf * (K1 + 1.0) / (tf + K1 * norm)


def bm25_to_score(score: float) -> float:
    """Map a BM25 sum ``s ≥ 0`` to ``s / (1 + s)`` ∈ [0, 1) (0 for anything else). An FTS5 rank
    is a negated sum: pass ``-rank`` (OpenClaw's ``-r / (1 - r)``)."""
    return score / (1.0 + score) if score > 0 and math.isfinite(score) else 0.0


def bm25_search(
    store: IndexBackend,
    query: KeywordQuery,
    limit: int,
    stats: CorpusStats,
    idf: Mapping[str, float] | None = None,
) -> list[tuple[int, float]]:
    """``(seq, bm25)`` of the best ``limit`` chunks for ``query`` (``idf``: :func:`term_idf`
    of its terms times their weights, :meth:`KeywordQuery.weighted`, when the caller has it
    already)."""
    if limit <= 0:
        return []
    if idf is None:
        idf = query.weighted(term_idf(store, query.terms, stats))
    rows = store.keyword_candidates(query, idf, limit * PREFETCH, stats)
    groups = query.group_of()
    scored = [(seq, bm25_document(tokens.split(), idf, stats, groups)) for seq, tokens in rows]
    scored.sort(key=lambda item: (-item[1], item[0]))
    return scored[:limit]


def term_idf(store: IndexBackend, terms: Sequence[str], stats: CorpusStats) -> dict[str, float]:
    """Each distinct term's Lucene IDF in the stored chunks."""
    wanted = list(dict.fromkeys(terms))
    return idf_from_df(store.document_frequencies(wanted), wanted, stats)


def idf_from_df(
    df: Mapping[str, int], terms: Sequence[str], stats: CorpusStats
) -> dict[str, float]:
    """Each of ``terms``' Lucene IDF from its document frequency (absent: in no chunk)."""
    return {t: lucene_idf(stats.documents, df.get(t, 0)) for t in dict.fromkeys(terms)}


def bm25_document(
    words: Sequence[str],
    idf: Mapping[str, float],
    stats: CorpusStats,
    groups: Mapping[str, int] | None = None,
) -> float:
    """BM25 of one chunk (its token list) for the terms of ``idf``; with ``groups`` (term →
    group, :attr:`KeywordQuery.groups`), each group adds only its best term's part."""
    counts = Counter(words)
    if not groups:
        return sum(
            bm25_term(counts.get(t, 0), len(words), stats.avg_length, w) for t, w in idf.items()
        )
    best: dict[object, float] = {}
    for t, w in idf.items():
        part = bm25_term(counts.get(t, 0), len(words), stats.avg_length, w)
        group: object = groups.get(t, t)  # a term outside every group is one of its own
        if part > best.get(group, 0.0):
            best[group] = part
    return sum(best.values())
