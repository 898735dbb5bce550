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

import contextlib
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memdir.index.manager import IndexManager
from memdir.search.across import centred_query, language_share, rescore
from memdir.search.answers import answer_first, asked_slot
from memdir.search.decay import apply_temporal_decay
from memdir.search.echoes import demote_echoes, find_echoes
from memdir.search.fusion import FUSIONS, keyword_only_scores, mark_fresh, prefer_fresh
from memdir.search.gate import evidence, soft_unknown
from memdir.search.legs import (
    TRANSLATION_WEIGHT,
    KeywordLeg,
    complete_legs,
    embed_candidates,
    estimate_missing_vectors,
    keyword_leg,
)
from memdir.search.mmr import mmr_rerank
from memdir.search.placement import place_results
from memdir.search.plan import SearchPlan
from memdir.search.relevance import (
    apply_calibration,
    apply_min_score,
    cut_off_topic,
    holds_query,
    set_parts,
)
from memdir.search.rerank_stage import focus_lines, rerank_passages
from memdir.search.subqueries import merge_rankings, passage_id, without_repeated_lines
from memdir.search.terms import term_weights
from memdir.search.types import Candidate, SearchResponse, SearchResult, placeholder_chunk
from memdir.search.variants import merge_pools


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
    forms: dict[str, float] = field(default_factory=dict)  # every form of the terms → weight


#: threadpoolctl's handles on the BLAS libraries loaded, found again when modules were imported
#: since (faiss brings its own): (len(sys.modules) when found, the libraries).
_blas: tuple[int, list[Any]] | None = None
_blas_lock = threading.Lock()
#: Searches running now, and each library's thread count to put back when the last one ends.
_blas_users = 0
_blas_saved: list[tuple[Any, int]] = []


def _blas_libraries() -> list[Any]:
    global _blas
    if _blas is None or _blas[0] != len(sys.modules):
        try:
            import threadpoolctl

            found = threadpoolctl.ThreadpoolController().select(user_api="blas").lib_controllers
        except Exception:  # optional: without it the threads are left alone
            found = []
        _blas = (len(sys.modules), list(found))
    return _blas[1]


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """Numpy's BLAS on one thread while searches run: a search multiplies small matrices
    (a query against a few thousand vectors, MMR over dozens), which a second BLAS thread only
    slows, and on a busy machine its spinning threads cost more than the work (a 1,452 × 384
    product took 6 ms instead of 0.05 at load 2). The counts are put back when the last search
    running ends, so a host application's own numpy keeps its threads between searches."""
    global _blas_users, _blas_saved
    with _blas_lock:
        if _blas_users == 0:
            _blas_saved = [(lib, lib.num_threads) for lib in _blas_libraries()]
            for lib, _count in _blas_saved:
                lib.set_num_threads(1)
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0:
                for lib, count in _blas_saved:
                    lib.set_num_threads(count)
                _blas_saved = []


def run_search(manager: IndexManager, plan: SearchPlan) -> SearchResponse:
    """Run the whole pipeline on an up-to-date index (the caller refreshes it first); see
    :func:`_run_search`. Numpy's BLAS runs on one thread meanwhile (:func:`_one_blas_thread`)."""
    with _one_blas_thread():
        return _run_search(manager, plan)


def _run_search(manager: IndexManager, plan: SearchPlan) -> SearchResponse:
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
    keyword_legs = [
        keyword_leg(manager, part, mode, plan.fetch, plan.bridge) for part in plan.parts
    ]
    variant_legs = [
        keyword_leg(manager, text, mode, plan.fetch, plan.bridge) for text in plan.variants
    ]
    vectors = plan.embeddings.wait(warnings)
    companion = plan.embeddings.companion
    rankings = [
        _rank_one(
            manager,
            plan,
            [leg, *(variant_legs if i == 0 else [])],
            vectors,
            companion,
        )
        for i, leg in enumerate(keyword_legs)
    ]
    main = rankings[0]
    if main.rescued and main.kept:
        warnings.append("no result passed min_score; showing keyword matches")
    lists = [
        _place(manager, plan, part, ranking, warnings, plan.variants if i == 0 else ())
        for i, (part, ranking) in enumerate(zip(plan.parts, rankings, strict=True))
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
    response.variants = list(plan.variants)
    response.estimated = sum(r.estimated for r in rankings)
    response.unknown = main.unknown
    response.evidence = main.evidence
    response.calibrated = main.mode == "hybrid" and plan.calibration is not None
    response.min_score = main.threshold
    return response


def _place(
    manager: IndexManager,
    plan: SearchPlan,
    part: str,
    ranking: _Ranking,
    warnings: list[str],
    variants: Sequence[str] = (),
) -> list[SearchResult]:
    """One query's kept candidates as results: placed, reordered by the reranker when it
    applies (its passages are the best ``rerank_top_n``), then the one holding what the
    question asks for first (:func:`~memdir.search.answers.answer_first`)."""
    weights = term_weights(list(ranking.forms), [c.chunk.text for c in ranking.pool], ranking.forms)
    budget = plan.config.snippet_chars
    slot = asked_slot(" ".join([part, *variants]))
    if not ranking.rerank or plan.reranker is None:
        placed = place_results(
            ranking.kept, plan.k, weights, budget, plan.lines_of, plan.tight, slot
        )
    else:
        passages = place_results(
            ranking.kept, plan.rerank_top_n, weights, budget, plan.lines_of, plan.tight, slot
        )
        line_vectors = manager.line_vectors if plan.config.line_scoring else None
        placed = rerank_passages(
            plan.reranker, part, passages, ranking.vector, weights, line_vectors, warnings
        )
    top = placed[: plan.k]
    moved = answer_first([r.snippet.split("\n") for r in top], weights, slot)
    if moved is not None:
        # The scores stay with the places (search/answers.py: measured to stay calibrated).
        scores = [r.score for r in placed[: moved + 1]]
        placed.insert(0, placed.pop(moved))
        for result, score in zip(placed, scores, strict=False):
            result.score = score
        placed[0].explain["answer_first"] = slot.name if slot is not None else None
    return placed


def _rank_one(
    manager: IndexManager,
    plan: SearchPlan,
    asked: Sequence[KeywordLeg],
    vectors: Mapping[str, Any],
    companion: Mapping[str, Any],
) -> _Ranking:
    """Every stage for one query (its keyword leg already run), up to ``min_score``; the
    query's variants, when ``asked`` holds more than its own leg, as one question with it
    (:mod:`memdir.search.variants`)."""
    leg = asked[0]
    keywords = leg.query
    query_vector = vectors.get(leg.text)
    mode = "hybrid" if query_vector is not None else ("keyword" if keywords else "empty")
    pools, legs, estimated = [], [], 0
    for one in asked:
        vector = vectors.get(one.text)
        pool, found = _gather(manager, plan, one, vector)
        kind = "hybrid" if vector is not None else ("keyword" if one.query else "empty")
        if kind != mode and mode == "hybrid":
            continue  # a variant that could not be embedded would be scored on another scale
        estimated += _score(manager, plan, pool, one, vector, kind, companion.get(one.text))
        pools.append(pool)
        legs += [name for name in found if name not in legs]
    pool = merge_pools(pools) if len(pools) > 1 else pools[0]
    pool = _shortlist(manager, plan, pool, leg.terms, query_vector)
    # The learned model was fitted on hybrid searches; remote rerankers read only text.
    reranker = plan.reranker
    rerank = reranker is not None and (mode == "hybrid" or reranker.remote)
    config = plan.config
    ranked = mmr_rerank(pool, lam=config.mmr_lambda, k=len(pool)) if config.mmr else pool
    for cand in ranked:
        cand.fused = cand.score
    ranking = _cut(manager, plan, ranked, asked, mode)
    ranking.pool, ranking.legs = pool, legs
    ranking.matched = any(one.query is not None for one in asked)
    ranking.vector, ranking.rerank = query_vector, rerank
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
        if plan.across is not None:
            # Notes of the other language, by meaning alone; scored on both legs below.
            centred = centred_query(query_vector, language_share(leg.text), plan.across.means)
            for seq, _ in manager.vector_search(centred, plan.fetch):
                candidates.setdefault(seq, Candidate(placeholder_chunk(seq)))
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
    companion_query: Any = None,
) -> int:
    """Score the candidates: both legs for each (hybrid), across languages where they differ
    from the query's, fused, a just-written match raised; or the keyword-only score. Returns
    how many vector legs were estimated."""
    config = plan.config
    estimated = 0
    if mode == "hybrid" and config.score_both_legs and query_vector is not None:
        complete_legs(manager, pool, query_vector, leg.query)
        if plan.embed_missing is not None:
            embed_candidates(pool, query_vector, plan.embed_missing)
        if plan.across is not None:
            rescore(pool, leg.text, query_vector, plan.across, companion_query)
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
    asked: Sequence[KeywordLeg],
    mode: str,
) -> _Ranking:
    """What the scores mean and what is kept (docs/design.md#search, step 7): in a hybrid
    search each candidate's parts, its calibrated relevance (with coefficients), sources
    before echoes, then the off-topic gate or ``min_score``; keyword-only mode keeps all.
    With variants (``asked`` holds several legs) the share of unknown terms is the lowest of
    any variant and a chunk's coverage its highest."""
    terms = list(dict.fromkeys(t for one in asked for t in one.terms))
    unknown = soft = 0.0
    if mode == "hybrid":
        found = [manager.found_weights(one.forms) for one in asked]
        unknown = min(sum(w <= 0 for w in f) / len(f) if f else 0.0 for f in found)
        soft = min(soft_unknown([min(1.0, w / TRANSLATION_WEIGHT) for w in f]) for f in found)
    rescued = False
    threshold = plan.min_score
    calibration = plan.calibration
    echoes = find_echoes(ranked) if mode == "hybrid" else {}
    if mode == "hybrid":
        seqs = [c.chunk.seq for c in ranked]
        coverage: dict[int, float] = {}
        for one in asked:
            for seq, share in manager.term_coverage(one.forms, seqs).items():
                coverage[seq] = max(coverage.get(seq, 0.0), share)
        set_parts(ranked, unknown, coverage, echoes)
    gate_evidence = evidence(ranked, unknown, soft) if mode == "hybrid" else {}
    if gate_evidence:  # a candidate holding the query's words: never gated (--explain)
        gate_evidence["held"] = float(any(holds_query(c, unknown) for c in ranked))
    if mode == "hybrid" and calibration is not None:
        apply_calibration(ranked, calibration)
        ranked = demote_echoes(ranked, echoes)
        if threshold is None:
            threshold = plan.config.min_score
        kept = cut_off_topic(ranked, calibration, threshold, unknown, gate_evidence)
    elif mode == "hybrid":
        ranked = demote_echoes(ranked, echoes)
        if threshold is None:
            threshold = plan.config.raw_min_score
        kept, rescued = apply_min_score(ranked, min_score=threshold)
    else:
        kept = ranked  # keyword-only mode returns its best even below min_score
    ranking = _Ranking(kept, [], mode, [], terms, rescued, False, unknown=unknown)
    for one in asked:
        for form, weight in one.weights.items():
            ranking.forms[form] = max(ranking.forms.get(form, 0.0), weight)
    if mode == "hybrid":
        ranking.evidence = {k: round(v, 6) for k, v in gate_evidence.items()}
    ranking.threshold = threshold if mode == "hybrid" else None
    return ranking


__all__ = ["run_search"]
