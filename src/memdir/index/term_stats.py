"""What the index knows about a query's words: corpus statistics, document frequencies and
IDFs, read once per index generation, and the scores built on them that need no search —
memdir BM25 of chosen chunks, term coverage, and which terms (or their translations) occur
at all (the off-topic gate's evidence, docs/design.md step 7).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memdir.index.base import CorpusStats, IndexBackend, KeywordQuery
from memdir.index.bm25 import bm25_document, bm25_to_score, corpus_stats, idf_from_df


class TermStatistics:
    """Term statistics of one index, cached per generation.

    Args:
        read: runs a read on the index (the manager's, which recovers a lost connection).
        generation: the index's current cache key; a new key drops what was read.
    """

    def __init__(
        self, read: Callable[[Callable[[IndexBackend], Any]], Any], generation: Callable[[], object]
    ) -> None:
        self._read = read
        self._generation = generation
        self._stats: tuple[object, CorpusStats] | None = None
        #: The last query's terms: (key, document frequencies, IDFs).
        self._terms: tuple[object, dict[str, int], dict[str, float]] | None = None

    def corpus(self) -> CorpusStats:
        """Document count and average length, read once per index generation."""
        key = self._generation()
        if self._stats is None or self._stats[0] != key:
            self._stats = (key, self._read(corpus_stats))
        return self._stats[1]

    def counts(self, terms: Sequence[str]) -> tuple[dict[str, int], dict[str, float]]:
        """Document frequencies and IDFs of the query terms, read once for the last query of
        this index generation (the keyword leg, the scoring of vector-only candidates, term
        coverage and the found weights all use them)."""
        stats = self.corpus()
        generation = self._stats[0] if self._stats is not None else None
        wanted = list(dict.fromkeys(terms))
        key = (generation, tuple(wanted))
        if self._terms is None or self._terms[0] != key:
            df = dict(self._read(lambda store: store.document_frequencies(wanted)))
            self._terms = (key, df, idf_from_df(df, wanted, stats))
        return self._terms[1], self._terms[2]

    def idf(self, terms: Sequence[str]) -> dict[str, float]:
        """IDFs of the query terms (see :meth:`counts`)."""
        return self.counts(terms)[1]

    def keyword_scores(self, query: KeywordQuery, seqs: Sequence[int]) -> dict[int, float]:
        """Saturated memdir BM25 of these chunks, from their stored index tokens."""
        if not seqs:
            return {}
        idf = query.weighted(self.idf(query.terms))
        stats = self.corpus()
        tokens = self._read(lambda store: store.chunk_tokens(list(seqs)))
        groups = query.group_of()
        return {
            seq: bm25_to_score(bm25_document(words, idf, stats, groups))
            for seq, words in tokens.items()
        }

    def coverage(
        self, concepts: Sequence[Mapping[str, float]], seqs: Sequence[int]
    ) -> dict[int, float]:
        """For each chunk, the share of the query's weight that its stored tokens hold.

        Each of ``concepts`` is one query term's forms, form → weight: the term itself first
        (weight 1), then its translations (weight < 1, :mod:`memdir.bridge`). A concept weighs
        its term's IDF, or, when no chunk holds the term, the IDF of its rarest known form; a
        chunk holds of it the best ``weight · IDF`` among the forms it has (at most the
        concept's weight). So a chunk with every term scores 1, more for its rare terms than
        its common ones, and a translation counts for its weight only.
        """
        wanted = [dict(c) for c in concepts if c]
        if not wanted or not seqs:
            return {}
        forms = list(dict.fromkeys(f for c in wanted for f in c))
        df, idf = self.counts(forms)
        plan: list[tuple[float, dict[str, float]]] = []
        for concept in wanted:
            term = next(iter(concept))
            known = {f: w * idf[f] for f, w in concept.items() if df.get(f, 0) > 0}
            if term in known:
                total = idf[term]
            elif known:
                total = max(idf[f] for f in known)
            else:
                total = idf[term]
            plan.append((total, known))
        grand = sum(total for total, _ in plan) or 1.0
        tokens = self._read(lambda store: store.chunk_tokens(list(seqs)))
        out = {}
        for seq, words in tokens.items():
            have = set(words)
            held = 0.0
            for total, known in plan:
                held += min(total, max((x for f, x in known.items() if f in have), default=0.0))
            out[seq] = held / grand
        return out

    def found_weights(self, concepts: Sequence[Mapping[str, float]]) -> list[float]:
        """For each of the query's terms (its forms → weights), the weight of its best form
        that occurs in some chunk of the index (0 when none does)."""
        wanted = [dict(c) for c in concepts if c]
        if not wanted:
            return []
        found = self.counts(list(dict.fromkeys(f for c in wanted for f in c)))[0]
        return [max((w for f, w in c.items() if found.get(f, 0) > 0), default=0.0) for c in wanted]


__all__ = ["TermStatistics"]
