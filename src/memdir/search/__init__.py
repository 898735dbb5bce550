"""Hybrid search (docs/design.md#search): one small module per stage, composed by
:func:`~memdir.search.pipeline.run_search` over one :class:`~memdir.search.plan.SearchPlan`.

1. vector leg: cosine similarity → candidates (:mod:`~memdir.search.legs`)
2. keyword leg: memdir's BM25 over the query's terms, OR-ed (:mod:`~memdir.search.legs`)
3. each candidate scored on the leg that did not return it (``search.score_both_legs``; off =
   OpenClaw's "a missing leg scores 0"), a missing vector embedded or estimated
   (:mod:`~memdir.search.legs`)
4. fusion: ``w_v·vector + w_t·text`` per chunk, or reciprocal rank fusion
   (:mod:`~memdir.search.fusion`)
5. temporal decay: daily logs decay with a half-life; other files are evergreen
   (:mod:`~memdir.search.decay`)
6. MMR: diversity with Jaccard over word tokens (CJK unigrams + bigrams)
   (:mod:`~memdir.search.mmr`)
7. what a score means (the calibrated relevance), sources before echoes and the cut: the
   off-topic gate, or ``min_score`` with the keyword rescue (:mod:`~memdir.search.relevance`,
   :mod:`~memdir.search.echoes`)
8. placement: results that never repeat a line, widened to the snippet budget
   (:mod:`~memdir.search.placement`)
9. with a reranker (``[rerank] provider``): the best ``rerank.top_n`` candidates placed as
   passages and reordered (:mod:`~memdir.search.rerank_stage`, its line features
   :mod:`~memdir.search.features`); the first ``max_results`` are returned
10. several queries (the caller's, or the parts the engine finds): stages 1–9 for each, merged
    with reserved slots (:mod:`~memdir.search.subqueries`)

Without an embedder (or when the query embedding fails) the keyword candidates are ranked by
term coverage, BM25, density and path match, and the best returned even below ``min_score``.

The data every stage passes on is at the bottom (:mod:`~memdir.search.types`); no module of the
package imports one that composes it. The names below are imported on first use.
"""

from typing import TYPE_CHECKING

from memdir._lazy import lazy_exports

_EXPORTS = {
    "Candidate": "memdir.search.types",
    "SearchPlan": "memdir.search.plan",
    "SearchResponse": "memdir.search.types",
    "SearchResult": "memdir.search.types",
    "query_parts": "memdir.search.plan",
    "run_search": "memdir.search.pipeline",
}
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

if TYPE_CHECKING:
    from memdir.search.pipeline import run_search
    from memdir.search.plan import SearchPlan, query_parts
    from memdir.search.types import Candidate, SearchResponse, SearchResult

__all__ = [
    "Candidate",
    "SearchPlan",
    "SearchResponse",
    "SearchResult",
    "query_parts",
    "run_search",
]
