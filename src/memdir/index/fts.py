"""Keyword search: FTS5 finds the candidates, memdir scores them with BM25.

FTS5's own ``bm25()`` uses an IDF that collapses to ~0 when a term is in half the documents or
more, so in a small workspace (a handful of notes) every keyword score is near zero. memdir
computes BM25 itself with the Lucene IDF ``ln(1 + (N − df + 0.5) / (df + 0.5))``, which stays
positive at any corpus size, and k1 = 1.2, b = 0.75:

    bm25(d, q) = Σ_t idf(t) · tf(t, d)·(k1 + 1) / (tf(t, d) + k1·(1 − b + b·|d| / avgdl))

Term frequencies come from the stored tokens (memdir's own tokenizer wrote them, so they are
exactly FTS5's terms), document frequencies from the ``chunks_vocab`` fts5vocab table. The same
computation runs unchanged on any backend that can return candidate rows.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from memdir.index.store import IndexStore

K1 = 1.2
B = 0.75
#: FTS5 pre-ranks this many times more candidates than asked, before memdir re-scores them.
PREFETCH = 2


@dataclass(frozen=True)
class CorpusStats:
    """What BM25 needs to know about the whole index."""

    documents: int
    avg_length: float


def corpus_stats(store: IndexStore) -> CorpusStats:
    """Number of chunks and their mean token count."""
    count, avg = store.conn.execute("SELECT count(*), avg(token_count) FROM chunks").fetchone()
    return CorpusStats(int(count), float(avg or 0.0))


def lucene_idf(documents: int, df: int) -> float:
    """``ln(1 + (N − df + 0.5) / (df + 0.5))``: positive for any df ≤ N."""
    return math.log(1.0 + (documents - df + 0.5) / (df + 0.5))


def bm25_term(tf: int, length: int, avg_length: float, idf: float) -> float:
    """One term's BM25 contribution."""
    if tf <= 0:
        return 0.0
    norm = 1.0 - B + B * (length / avg_length if avg_length > 0 else 1.0)
    return idf * tf * (K1 + 1.0) / (tf + K1 * norm)


def bm25_search(
    store: IndexStore,
    match: str,
    terms: Sequence[str],
    limit: int,
    stats: CorpusStats,
) -> list[tuple[int, float]]:
    """``(seq, bm25)`` of the best ``limit`` chunks for the FTS5 ``match`` over ``terms``."""
    if limit <= 0 or not terms:
        return []
    rows = store.conn.execute(
        "SELECT rowid, tokens FROM chunks_fts WHERE chunks_fts MATCH ? "
        "ORDER BY bm25(chunks_fts) LIMIT ?",
        (match, limit * PREFETCH),
    ).fetchall()
    if not rows:
        return []
    wanted = list(dict.fromkeys(terms))
    marks = ",".join("?" * len(wanted))
    df = {
        str(term): int(docs)
        for term, docs in store.conn.execute(
            f"SELECT term, doc FROM chunks_vocab WHERE term IN ({marks})", wanted
        )
    }
    idf = {t: lucene_idf(stats.documents, df.get(t, 0)) for t in wanted}
    scored: list[tuple[int, float]] = []
    for seq, tokens in rows:
        words = str(tokens).split()
        counts = Counter(words)
        score = sum(
            bm25_term(counts.get(t, 0), len(words), stats.avg_length, idf[t]) for t in wanted
        )
        scored.append((int(seq), score))
    scored.sort(key=lambda item: (-item[1], item[0]))
    return scored[:limit]
