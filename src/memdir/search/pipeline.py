"""The search pipeline composed (docs/design.md#search): :func:`run_search` runs every stage
for each query of a :class:`~memdir.search.plan.SearchPlan` and merges their results.

For each query (:func:`_rank_one`): its candidates from both legs (:func:`_gather`), each scored
on both and fused (:func:`_score`), temporal decay and the shortlist (:func:`_shortlist`), MMR,
then what the score means and the cut (:func:`_cut`). The kept candidates are placed as results
(:func:`~memdir.search.placement.place_results`), reordered by the reranker when there is one
(:func:`~memdir.search.rerank_stage.rerank_passages`), and the queries' lists merged with
reserved slots (:func:`~memdir.search.subqueries.merge_rankings`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memdir.index.manager import IndexManager
from memdir.search.decay import apply_temporal_decay
from memdir.search.echoes import demote_echoes
from memdir.search.fusion import FUSIONS, keyword_only_scores, mark_fresh, prefer_fresh
from memdir.search.legs import (
    KeywordLeg,
    complete_legs,
    embed_candidates,
    estimate_missing_vectors,
    keyword_leg,
)
from memdir.search.mmr import mmr_rerank
from memdir.search.placement import place_results
from memdir.search.plan import SearchPlan
from memdir.search.relevance import apply_calibration, apply_min_score, cut_off_topic, set_parts
from memdir.search.rerank_stage import focus_lines, rerank_passages
from memdir.search.subqueries import merge_rankings, passage_id, without_repeated_lines
from memdir.search.terms import term_weights
from memdir.search.types import Candidate, SearchResponse, SearchResult, placeholder_chunk


@dataclass
class _Ranking:
    """One query's candidates after every stage up to ``min_score``."""

    kept: list[Candidate]
    pool: list[Candidate]
    mode: str
    legs: list[str]
    terms: list[str]
    rescued: bool
    matched: bool  # the keyword leg had terms to search
    vector: Any = None  # the query's embedding (None: keyword-only)
    rerank: bool = False  # the reranker applies (then MMR runs over the reranked passages)
    estimated: int = 0  # candidates ranked with an estimated vector leg
    unknown: float = 0.0  # the share of the query's terms no chunk holds
    threshold: float | None = None  # the min_score applied (None in keyword-only mode)
    evidence: dict[str, float] = field(default_factory=dict)  # what the off-topic gate saw


def run_search(manager: IndexManager, plan: SearchPlan) -> SearchResponse:
    """Run the whole pipeline on an up-to-date index (the caller refreshes it first).

    With ``plan.lines_of`` results are widened with neighbouring lines up to ``snippet_chars``
    (:func:`~memdir.search.placement.place_results`); ``plan.embed_missing`` embeds candidates
    that have no vector yet, the rest get an estimate. With a ``plan.calibration`` the scores
    are calibrated relevances and the threshold applies to them; without one, the fused scores
    and ``search.raw_min_score`` (with the keyword rescue of docs/design.md#search).
    ``plan.reranker`` reorders the best ``plan.rerank_top_n`` placed passages. Each of
    ``plan.parts`` is searched, the parts after the first with reserved result slots.
    """
    warnings: list[str] = []
    # The queries are embedded on a worker thread while the keyword legs run (legs.py).
    mode = plan.config.keyword_query
    keyword_legs = [keyword_leg(manager, part, mode, plan.fetch) for part in plan.parts]
    vectors = plan.embeddings.wait(warnings)
    rankings = [
        _rank_one(manager, plan, leg, vectors.get(part))
        for part, leg in zip(plan.parts, keyword_legs, strict=True)
    ]
    main = rankings[0]
    if main.rescued and main.kept:
        warnings.append("no result passed min_score; showing keyword matches")
    lists = [
        _place(manager, plan, part, ranking, warnings)
        for part, ranking in zip(plan.parts, rankings, strict=True)
    ]
    k = plan.k
    if len(lists) == 1:
        results = lists[0][:k]
    else:
        slots = plan.config.subquery_slots if plan.split else max(1, k // len(lists))
        merged = merge_rankings(lists, slots=slots, ident=passage_id)
        results = without_repeated_lines(merged)[:k]
    terms = list(dict.fromkeys(t for r in rankings for t in r.terms))
    if not main.matched and not plan.query.strip():
        warnings.append("empty query")
    elif not main.matched:
        warnings.append("the query has only stopwords; nothing to match")
    response = SearchResponse(plan.query, results, main.mode, main.legs, terms, warnings)
    response.queries = list(plan.parts)
    response.estimated = sum(r.estimated for r in rankings)
    response.unknown = main.unknown
    response.evidence = main.evidence
    response.calibrated = main.mode == "hybrid" and plan.calibration is not None
    response.min_score = main.threshold
    return response


def _place(
    manager: IndexManager, plan: SearchPlan, part: str, ranking: _Ranking, warnings: list[str]
) -> list[SearchResult]:
    """One query's kept candidates as results: placed, then reordered by the reranker when it
    applies (its passages are the best ``rerank_top_n``)."""
    weights = term_weights(ranking.terms, [c.chunk.text for c in ranking.pool])
    budget = plan.config.snippet_chars
    if not ranking.rerank or plan.reranker is None:
        return place_results(ranking.kept, plan.k, weights, budget, plan.lines_of, plan.tight)
    passages = place_results(
        ranking.kept, plan.rerank_top_n, weights, budget, plan.lines_of, plan.tight
    )
    line_vectors = manager.line_vectors if plan.config.line_scoring else None
    return rerank_passages(
        plan.reranker, part, passages, ranking.vector, weights, line_vectors, warnings
    )


def _rank_one(
    manager: IndexManager, plan: SearchPlan, leg: KeywordLeg, query_vector: Any
) -> _Ranking:
    """Every stage for one query (its keyword leg already run), up to ``min_score``."""
    keywords = leg.query
    pool, legs = _gather(manager, plan, leg, query_vector)
    mode = "hybrid" if query_vector is not None else ("keyword" if keywords else "empty")
    estimated = _score(manager, plan, pool, leg, query_vector, mode)
    pool = _shortlist(manager, plan, pool, leg.terms, query_vector)
    # The learned model was fitted on hybrid searches; remote rerankers read only text.
    reranker = plan.reranker
    rerank = reranker is not None and (mode == "hybrid" or reranker.remote)
    config = plan.config
    ranked = mmr_rerank(pool, lam=config.mmr_lambda, k=len(pool)) if config.mmr else pool
    for cand in ranked:
        cand.fused = cand.score
    ranking = _cut(manager, plan, ranked, leg.terms, mode)
    ranking.pool, ranking.legs = pool, legs
    ranking.matched, ranking.vector, ranking.rerank = keywords is not None, query_vector, rerank
    ranking.estimated = estimated
    return ranking


def _gather(
    manager: IndexManager, plan: SearchPlan, leg: KeywordLeg, query_vector: Any
) -> tuple[list[Candidate], list[str]]:
    """The candidates of both legs with their chunks (those of hidden paths left out), and the
    legs that ran."""
    legs: list[str] = []
    candidates: dict[int, Candidate] = {}
    if query_vector is not None:
        legs.append("vector")
        for seq, sim in manager.vector_search(query_vector, plan.fetch):
            cand = candidates.setdefault(seq, Candidate(placeholder_chunk(seq)))
            cand.vector, cand.has_vector = max(0.0, sim), True
    if leg.query is not None:
        legs.append("keyword")
        for seq, text_score in leg.hits:
            cand = candidates.setdefault(seq, Candidate(placeholder_chunk(seq)))
            cand.text = text_score
            cand.keyword_hit = True
    rows = manager.read(lambda store: store.chunks_by_seq(list(candidates)))
    pool = []
    for seq, cand in candidates.items():
        row = rows.get(seq)
        if row is None or row.path in plan.exclude:
            continue
        cand.chunk = row
        cand.query = leg.text
        pool.append(cand)
    return pool, legs


def _score(
    manager: IndexManager,
    plan: SearchPlan,
    pool: list[Candidate],
    leg: KeywordLeg,
    query_vector: Any,
    mode: str,
) -> int:
    """Score the candidates: both legs for each (hybrid), fused, a just-written match raised;
    or the keyword-only score. Returns how many vector legs were estimated."""
    config = plan.config
    estimated = 0
    if mode == "hybrid" and config.score_both_legs and query_vector is not None:
        complete_legs(manager, pool, query_vector, leg.query)
        if plan.embed_missing is not None:
            embed_candidates(pool, query_vector, plan.embed_missing)
        estimated = estimate_missing_vectors(pool)
    if mode == "keyword":
        keyword_only_scores(pool, leg.terms)
    else:
        FUSIONS[config.fusion](pool, config)
        mark_fresh(manager, pool)
        prefer_fresh(pool)
    return estimated


def _shortlist(
    manager: IndexManager,
    plan: SearchPlan,
    pool: list[Candidate],
    terms: list[str],
    query_vector: Any,
) -> list[Candidate]:
    """Temporal decay (when on), then the best ``plan.candidates``, each given its best line
    when snippets are centred."""
    config = plan.config
    if config.decay:
        extra_mtimes = (
            manager.read(lambda store: store.file_mtimes(source="extra"))
            if any(c.chunk.source == "extra" for c in pool)
            else None
        )
        apply_temporal_decay(
            pool,
            now=plan.now,
            half_life_days=config.half_life_days,
            extra_mtimes=extra_mtimes,
            floor=config.decay_floor,
        )
    pool.sort(key=lambda c: (-c.score, c.chunk.path, c.chunk.start_line))
    pool = pool[: plan.candidates]
    if config.centre_snippets:
        weights = term_weights(terms, [c.chunk.text for c in pool])
        line_vectors = manager.line_vectors if config.line_scoring else None
        focus_lines(pool, query_vector, weights, line_vectors)
    return pool


def _cut(
    manager: IndexManager,
    plan: SearchPlan,
    ranked: list[Candidate],
    terms: list[str],
    mode: str,
) -> _Ranking:
    """What the scores mean and what is kept (docs/design.md#search, step 7): in a hybrid
    search each candidate's parts, its calibrated relevance (with coefficients), sources
    before echoes, then the off-topic gate or ``min_score``; keyword-only mode keeps all."""
    unknown = manager.unknown_share(terms) if mode == "hybrid" else 0.0
    rescued = False
    threshold = plan.min_score
    calibration = plan.calibration
    if mode == "hybrid":
        set_parts(ranked, unknown, manager.term_coverage(terms, [c.chunk.seq for c in ranked]))
    if mode == "hybrid" and calibration is not None:
        apply_calibration(ranked, calibration)
        ranked = demote_echoes(ranked)
        if threshold is None:
            threshold = plan.config.min_score
        kept = cut_off_topic(ranked, calibration, threshold, unknown)
    elif mode == "hybrid":
        ranked = demote_echoes(ranked)
        if threshold is None:
            threshold = plan.config.raw_min_score
        kept, rescued = apply_min_score(ranked, min_score=threshold)
    else:
        kept = ranked  # keyword-only mode returns its best even below min_score
    ranking = _Ranking(kept, [], mode, [], terms, rescued, False, unknown=unknown)
    if mode == "hybrid":
        ranking.evidence = {
            "best_coverage": round(max((c.coverage for c in ranked), default=0.0), 6),
            "best_vector": round(max((c.vector for c in ranked if c.has_vector), default=0.0), 6),
            "unknown": round(unknown, 6),
        }
    ranking.threshold = threshold if mode == "hybrid" else None
    return ranking


__all__ = ["run_search"]
