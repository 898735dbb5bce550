"""Hybrid search (docs/design.md#search, plus a rerank stage and sub-queries): each stage a
small named function, composed by :func:`run_search`.

1. vector leg: cosine similarity → candidates
2. keyword leg: memdir's BM25 over the query's terms, OR-ed (:class:`KeywordQuery`) →
   :func:`memdir.index.bm25.bm25_to_score`
3. :func:`complete_legs`: each candidate scored on the leg that did not return it
   (``search.score_both_legs``; off = OpenClaw's "a missing leg scores 0")
4. :func:`merge_hybrid`: ``w_v·vector + w_t·text`` per chunk
5. :func:`apply_temporal_decay`: daily logs decay with a half-life; other files are evergreen
6. :func:`mmr_rerank`: diversity with Jaccard over word tokens (CJK unigrams + bigrams)
7. :func:`apply_min_score`: keep ≥ min_score (the fused score), else rescue the keyword hits
8. :func:`memdir.results.place_results`: results that never repeat a line, widened to the
   snippet budget
9. with a reranker (``[rerank] provider``): the best ``rerank.top_n`` candidates are placed
   as passages in stage 8 and reordered by the reranker (:mod:`memdir.rerank.stage`); the
   first ``max_results`` are returned
10. several queries (the caller's, or the parts :func:`memdir.subqueries.split_query` finds):
    stages 1–9 for each, merged with reserved slots (:func:`memdir.subqueries.merge_rankings`)

Without an embedder (or when the query embedding fails) :func:`keyword_only_scores` ranks the
keyword candidates by term coverage, BM25, density and path match, and returns the best even
below ``min_score``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import lru_cache
from typing import Any

import numpy as np

from memdir.config import SearchConfig
from memdir.echoes import demote_echoes
from memdir.embeddings.base import Embedder, Vectors
from memdir.index.base import ChunkRow, KeywordQuery
from memdir.index.manager import IndexManager
from memdir.legs import KeywordLeg, QueryEmbeddings, keyword_leg, query_parts
from memdir.relevance import (
    FRESH_SECONDS,
    Calibration,
    apply_calibration,
    cut_off_topic,
    set_parts,
)
from memdir.rerank.base import Reranker
from memdir.rerank.stage import focus_lines, rerank_passages
from memdir.results import (
    LinesOf,
    SearchResult,
    chunk_tokens,
    needs_segmentation,
    place_results,
    term_weights,
)
from memdir.subqueries import (
    merge_rankings,
    passage_id,
    without_repeated_lines,
)
from memdir.text import jaccard, similarity_tokens
from memdir.workspace import is_daily_log

#: Keyword-hit rescue threshold when nothing passes min_score (docs/design.md#search, step 7).
RESCUE_MIN_SCORE = 0.3


@dataclass
class SearchResponse:
    """Results plus how they were found."""

    query: str
    results: list[SearchResult]
    mode: str  # "hybrid", "keyword" or "empty"
    legs: list[str]
    terms: list[str]
    warnings: list[str] = field(default_factory=list)
    index: dict[str, Any] = field(default_factory=dict)
    #: Candidates ranked with an estimated vector leg (their chunk had no vector yet).
    estimated: int = 0
    #: The share of the query's terms that occur in no chunk (part of a calibrated score).
    unknown: float = 0.0
    #: The scores are calibrated relevances (see :mod:`memdir.relevance`).
    calibrated: bool = False
    #: The threshold the results passed (None in keyword-only mode, which has none).
    min_score: float | None = None
    #: Every query searched: the query, then the caller's further queries or its own parts.
    queries: list[str] = field(default_factory=list)
    #: What the off-topic gate looked at (:func:`memdir.relevance.cut_off_topic`): the best
    #: candidate's term coverage and cosine (``--explain`` shows them).
    evidence: dict[str, float] = field(default_factory=dict)

    def to_dict(self, *, explain: bool = False) -> dict[str, Any]:
        data = self._data(explain)
        if explain:
            data["evidence"] = self.evidence
        return data

    def _data(self, explain: bool) -> dict[str, Any]:
        return {
            "query": self.query,
            "queries": self.queries or [self.query],
            "mode": self.mode,
            "legs": self.legs,
            "terms": self.terms,
            "results": [r.to_dict(explain=explain) for r in self.results],
            "scores": "relevance" if self.calibrated else "fused",
            "min_score": self.min_score,
            "unknown_terms": round(self.unknown, 3),
            "warnings": self.warnings,
            "index": self.index,
        }


@dataclass
class Candidate:
    """A chunk on its way through the pipeline."""

    chunk: ChunkRow
    vector: float = 0.0
    text: float = 0.0
    score: float = 0.0
    decay: float = 1.0
    age_days: float | None = None
    keyword_hit: bool = False
    mmr_rank: int | None = None
    #: The vector leg is the chunk's real cosine similarity; False: the chunk has no vector
    #: (not embedded yet, or too large to embed) and ``vector`` is an estimate.
    has_vector: bool = False
    #: The fused score that ranked it (``score`` becomes its calibrated relevance when the
    #: embedding model has coefficients, see :mod:`memdir.relevance`).
    fused: float = 0.0
    #: The share of the query terms' IDF weight that the chunk holds.
    coverage: float = 0.0
    #: The best line of the chunk (1-based file line): the snippet is centred on it.
    focus_line: int | None = None
    #: The query (or sub-query) that found it.
    query: str = ""
    #: The parts its calibrated relevance was computed from (:mod:`memdir.relevance`).
    parts: dict[str, float] = field(default_factory=dict)
    #: The citation of the result it quotes (:mod:`memdir.echoes`), if it is an echo.
    echo_of: str | None = None
    #: Its file changed in the last ``relevance.FRESH_SECONDS`` (just written).
    fresh: bool = False


# -- stages ------------------------------------------------------------------------------


@lru_cache(maxsize=2048)
def _similarity_tokens(text: str) -> frozenset[str]:
    return similarity_tokens(text)


def complete_legs(
    manager: IndexManager,
    pool: Sequence[Candidate],
    query_vector: Any,
    keywords: KeywordQuery | None,
) -> None:
    """Give each candidate the leg that did not return it: the cosine similarity of a keyword
    hit outside the vector top-k, the BM25 of a vector hit the keyword leg missed. Without
    this a chunk found by one leg scores 0 on the other and sinks below weaker chunks that
    both legs returned."""
    no_vector = [c.chunk.seq for c in pool if not c.has_vector]
    if no_vector:
        sims = manager.vector_scores(query_vector, no_vector)
        for cand in pool:
            if cand.chunk.seq in sims:
                cand.vector = max(0.0, sims[cand.chunk.seq])
                cand.has_vector = True
    no_text = [c.chunk.seq for c in pool if not c.keyword_hit]
    if no_text and keywords is not None:
        scores = manager.keyword_scores(keywords, no_text)
        for cand in pool:
            if scores.get(cand.chunk.seq, 0.0) > 0:
                cand.text = scores[cand.chunk.seq]
                cand.keyword_hit = True


#: ``embed_missing(seqs)``: embed (and store) what it can of these chunks that lack a vector,
#: in this order, within its own budget; returns their vectors.
EmbedMissing = Callable[[Sequence[int]], Mapping[int, Vectors]]


def embed_candidates(
    pool: Sequence[Candidate], query_vector: Vectors, embed_missing: EmbedMissing
) -> int:
    """Give the candidates without a vector their real one where ``embed_missing`` can, the
    strongest keyword matches first; returns how many it embedded."""
    missing = sorted((c for c in pool if not c.has_vector), key=lambda c: -c.text)
    if not missing:
        return 0
    fresh = embed_missing([c.chunk.seq for c in missing])
    q = np.asarray(query_vector, dtype=np.float32)
    for cand in missing:
        vector = fresh.get(cand.chunk.seq)
        if vector is not None:
            cand.vector = max(0.0, float(np.asarray(vector, dtype=np.float32) @ q))
            cand.has_vector = True
    return sum(1 for c in missing if c.has_vector)


def estimate_missing_vectors(pool: Sequence[Candidate]) -> int:
    """Estimate the vector leg of candidates that have no vector, so that a keyword match
    competes on equal terms instead of scoring 0 on that leg (SPEC's "missing side = 0" sank
    every chunk not embedded yet below every embedded one).

    The estimate places a chunk within this query's own range of similarities by its keyword
    strength: ``low + (high − low) · text / best_text``, where ``high`` and ``low`` are the best
    and the median similarity among candidates that have a vector. Returns how many it
    estimated.
    """
    missing = [c for c in pool if not c.has_vector]
    if not missing:
        return 0
    known = sorted(c.vector for c in pool if c.has_vector)
    high = known[-1] if known else 0.0
    low = known[len(known) // 2] if known else 0.0
    best_text = max((c.text for c in pool), default=0.0) or 1.0
    for cand in missing:
        cand.vector = low + (high - low) * (cand.text / best_text)
    return len(missing)


def merge_hybrid(candidates: Sequence[Candidate], vector_weight: float, text_weight: float) -> None:
    """Set ``score = w_v·vector + w_t·text`` on every candidate."""
    for cand in candidates:
        cand.score = vector_weight * cand.vector + text_weight * cand.text


def merge_rrf(
    candidates: Sequence[Candidate], vector_weight: float, text_weight: float, k: int
) -> None:
    """Reciprocal rank fusion: ``w_v/(k + rank_v) + w_t/(k + rank_t)``, divided by its value for
    rank 1 in both legs (so that scores lie in [0, 1]). A leg that did not return the candidate
    adds nothing.
    """
    best = (vector_weight + text_weight) / (k + 1) or 1.0
    by_vector = sorted((c for c in candidates if c.vector > 0), key=lambda c: -c.vector)
    by_text = sorted((c for c in candidates if c.keyword_hit), key=lambda c: -c.text)
    vector_rank = {id(c): r for r, c in enumerate(by_vector, start=1)}
    text_rank = {id(c): r for r, c in enumerate(by_text, start=1)}
    for cand in candidates:
        total = 0.0
        if id(cand) in vector_rank:
            total += vector_weight / (k + vector_rank[id(cand)])
        if id(cand) in text_rank:
            total += text_weight / (k + text_rank[id(cand)])
        cand.score = total / best


#: ``search.fusion`` → how the two legs become one score.
FUSIONS = {
    "weighted": lambda pool, cfg: merge_hybrid(pool, cfg.vector_weight, cfg.text_weight),
    "rrf": lambda pool, cfg: merge_rrf(pool, cfg.vector_weight, cfg.text_weight, cfg.rrf_k),
}


def file_date(path: str) -> date | None:
    """The date of a daily log ``memory/YYYY-MM-DD.md``; None for evergreen files."""
    day = is_daily_log(path)
    return date.fromisoformat(day) if day else None


def decay_factor(age_days: float, half_life_days: float) -> float:
    """``exp(-ln2 · age / half_life)``; no decay for a non-positive half-life or age."""
    if half_life_days <= 0 or age_days <= 0:
        return 1.0
    return math.exp(-math.log(2) * age_days / half_life_days)


def apply_temporal_decay(
    candidates: Sequence[Candidate],
    *,
    now: datetime,
    half_life_days: float,
    extra_mtimes: dict[str, float] | None = None,
    floor: float = 0.0,
) -> None:
    """Scale daily-log scores (and extra paths', by mtime) by their age; others are evergreen."""
    today = now.date()
    for cand in candidates:
        day = file_date(cand.chunk.path)
        age: float | None = None
        if day is not None:
            age = float((today - day).days)
        elif cand.chunk.source == "extra" and extra_mtimes and cand.chunk.path in extra_mtimes:
            age = (now.timestamp() - extra_mtimes[cand.chunk.path]) / 86400.0
        if age is None:
            continue
        cand.age_days = age
        cand.decay = floor + (1.0 - floor) * decay_factor(age, half_life_days)
        cand.score *= cand.decay


def mmr_rerank(candidates: Sequence[Candidate], *, lam: float, k: int) -> list[Candidate]:
    """Maximal marginal relevance: pick ``k`` by ``λ·relevance − (1−λ)·max similarity``.

    Relevance is the score min–max normalised over the candidates; similarity is Jaccard over
    :func:`memdir.text.similarity_tokens`.
    """
    order = mmr_order(
        [c.score for c in candidates],
        [_similarity_tokens(c.chunk.text) for c in candidates],
        lam=lam,
        k=k,
    )
    out = [candidates[i] for i in order]
    for rank, cand in enumerate(out, start=1):
        cand.mmr_rank = rank
    return out


def mmr_order(
    scores: Sequence[float], tokens: Sequence[frozenset[str]], *, lam: float, k: int
) -> list[int]:
    """The MMR order of items with these relevance ``scores`` (min–max normalised) and token
    sets (Jaccard similarity): indices of the ``k`` picked, first pick first."""
    if not scores:
        return []
    lo, hi = min(scores), max(scores)
    span = hi - lo
    norm = [((s - lo) / span) if span > 0 else 1.0 for s in scores]
    # Each item's highest similarity to anything chosen so far, updated as we choose:
    # O(n²) Jaccard computations instead of O(n³).
    redundancy = [0.0] * len(scores)
    remaining = list(range(len(scores)))
    chosen: list[int] = []
    while remaining and len(chosen) < k:
        best = max(remaining, key=lambda i: lam * norm[i] - (1 - lam) * redundancy[i])
        chosen.append(best)
        remaining.remove(best)
        for i in remaining:
            redundancy[i] = max(redundancy[i], jaccard(tokens[i], tokens[best]))
    return chosen


def apply_min_score(
    ranked: Sequence[Candidate], *, min_score: float
) -> tuple[list[Candidate], bool]:
    """Keep candidates with ``score ≥ min_score``; if none pass, rescue keyword hits whose text
    score is ≥ ``min(min_score, 0.3)``. Returns the kept list and whether the rescue ran."""
    kept = [c for c in ranked if c.score >= min_score]
    if kept:
        return kept, False
    floor = min(min_score, RESCUE_MIN_SCORE)
    return [c for c in ranked if c.keyword_hit and c.text >= floor], True


def keyword_only_scores(candidates: Sequence[Candidate], terms: Sequence[str]) -> None:
    """Score keyword candidates without vectors (OpenClaw's fallback, reweighted by us).

    ``score = 0.45·coverage + 0.35·bm25 (normalised to the best) + 0.1·density + 0.1·path``
    where coverage is the share of query terms in the chunk, density the share of the chunk's
    tokens that are query terms (×5, capped at 1), and path whether a term is in the file path.
    """
    if not candidates:
        return
    wanted = set(terms)
    segment = needs_segmentation(terms)
    best_text = max(c.text for c in candidates) or 1.0
    for cand in candidates:
        tokens = chunk_tokens(cand.chunk.text, segment)
        present = wanted.intersection(tokens)
        coverage = len(present) / len(wanted) if wanted else 0.0
        hits = sum(1 for t in tokens if t in wanted)
        density = min(1.0, 5.0 * hits / len(tokens)) if tokens else 0.0
        path_tokens = set(chunk_tokens(cand.chunk.path, segment))
        path_match = 1.0 if wanted & path_tokens else 0.0
        cand.score = (
            0.45 * coverage + 0.35 * (cand.text / best_text) + 0.1 * density + 0.1 * path_match
        )


# -- composition --------------------------------------------------------------------------


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


def run_search(
    manager: IndexManager,
    embedder: Embedder | None,
    query: str,
    *,
    config: SearchConfig,
    now: datetime,
    max_results: int | None = None,
    min_score: float | None = None,
    exclude_paths: frozenset[str] = frozenset(),
    lines_of: LinesOf | None = None,
    embed_missing: EmbedMissing | None = None,
    calibration: Calibration | None = None,
    reranker: Reranker | None = None,
    rerank_top_n: int = 24,
    more_queries: Sequence[str] = (),
    embedding: QueryEmbeddings | None = None,
    tight: Callable[[str], bool] | None = None,
) -> SearchResponse:
    """Run the whole pipeline on an up-to-date index (the caller refreshes it first).

    ``lines_of(path)`` returns a file's current lines (or None); with it, results are widened
    with neighbouring lines up to ``snippet_chars`` (see :func:`place_results`).
    ``embed_missing`` embeds candidates that have no vector yet (:func:`embed_candidates`);
    the rest get an estimate (:func:`estimate_missing_vectors`). With a ``calibration`` the
    scores are calibrated relevances and ``min_score`` (default ``search.min_score``) applies
    to them; without one, the fused scores and ``search.raw_min_score`` (with the keyword
    rescue of docs/design.md#search).
    ``reranker`` reorders the best ``rerank_top_n`` candidates (:mod:`memdir.rerank`).
    ``more_queries`` are searched too, each with reserved result slots; without them a
    question about two things is split by :func:`memdir.subqueries.split_query`
    (``search.split_queries``). ``embedding``: the embedding of these queries, already
    started by the caller (:func:`memdir.legs.query_parts` gives them). ``tight(path)``:
    results from that file are shown without neighbouring lines (structured notes).
    """
    k = max(1, max_results or config.max_results)
    parts, auto = query_parts(query, more_queries, config.split_queries)
    warnings: list[str] = []
    # The queries are embedded on a worker thread while the keyword legs run (legs.py).
    embedding = embedding or QueryEmbeddings(embedder, parts)
    fetch = min(config.max_candidates, k * config.candidate_multiplier)
    fetch += 50 if exclude_paths else 0  # over-fetch when paths are hidden (shared scope)
    keyword_legs = [keyword_leg(manager, part, config.keyword_query, fetch) for part in parts]
    vectors = embedding.wait(warnings)
    rankings = [
        _rank_one(
            manager,
            leg,
            vectors.get(part),
            config=config,
            now=now,
            k=k,
            min_score=min_score,
            exclude_paths=exclude_paths,
            reranker=reranker,
            embed_missing=embed_missing,
            calibration=calibration,
        )
        for part, leg in zip(parts, keyword_legs, strict=True)
    ]
    main = rankings[0]
    if main.rescued and main.kept:
        warnings.append("no result passed min_score; showing keyword matches")
    lists = []
    for part, ranking in zip(parts, rankings, strict=True):
        weights = term_weights(ranking.terms, [c.chunk.text for c in ranking.pool])
        budget = config.snippet_chars
        if not ranking.rerank or reranker is None:
            lists.append(place_results(ranking.kept, k, weights, budget, lines_of, tight))
            continue
        passages = place_results(ranking.kept, rerank_top_n, weights, budget, lines_of, tight)
        line_vectors = manager.line_vectors if config.line_scoring else None
        lists.append(
            rerank_passages(
                reranker, part, passages, ranking.vector, weights, line_vectors, warnings
            )
        )
    if len(lists) == 1:
        results = lists[0][:k]
    else:
        slots = config.subquery_slots if auto else max(1, k // len(lists))
        merged = merge_rankings(lists, slots=slots, ident=passage_id)
        results = without_repeated_lines(merged)[:k]
    terms = list(dict.fromkeys(t for r in rankings for t in r.terms))
    if not main.matched and not query.strip():
        warnings.append("empty query")
    elif not main.matched:
        warnings.append("the query has only stopwords; nothing to match")
    response = SearchResponse(query, results, main.mode, main.legs, terms, warnings)
    response.queries = parts
    response.estimated = sum(r.estimated for r in rankings)
    response.unknown = main.unknown
    response.evidence = main.evidence
    response.calibrated = main.mode == "hybrid" and calibration is not None
    response.min_score = main.threshold
    return response


def _rank_one(
    manager: IndexManager,
    leg: KeywordLeg,
    query_vector: Any,
    *,
    config: SearchConfig,
    now: datetime,
    k: int,
    min_score: float | None,
    exclude_paths: frozenset[str],
    reranker: Reranker | None,
    embed_missing: EmbedMissing | None,
    calibration: Calibration | None,
) -> _Ranking:
    """Every stage for one query (its keyword leg already run), up to ``min_score``."""
    n_candidates = min(config.max_candidates, k * config.candidate_multiplier)
    terms, keywords, query = leg.terms, leg.query, leg.text
    legs: list[str] = []
    candidates: dict[int, Candidate] = {}
    fetch = n_candidates + (50 if exclude_paths else 0)
    if query_vector is not None:
        legs.append("vector")
        for seq, sim in manager.vector_search(query_vector, fetch):
            cand = candidates.setdefault(seq, Candidate(_placeholder(seq)))
            cand.vector, cand.has_vector = max(0.0, sim), True
    if keywords is not None:
        legs.append("keyword")
        for seq, text_score in leg.hits:
            cand = candidates.setdefault(seq, Candidate(_placeholder(seq)))
            cand.text = text_score
            cand.keyword_hit = True
    rows = manager.read(lambda store: store.chunks_by_seq(list(candidates)))
    pool = []
    for seq, cand in candidates.items():
        row = rows.get(seq)
        if row is None or row.path in exclude_paths:
            continue
        cand.chunk = row
        cand.query = query
        pool.append(cand)

    mode = "hybrid" if query_vector is not None else ("keyword" if keywords else "empty")
    estimated = 0
    if mode == "hybrid" and config.score_both_legs and query_vector is not None:
        complete_legs(manager, pool, query_vector, keywords)
        if embed_missing is not None:
            embed_candidates(pool, query_vector, embed_missing)
        estimated = estimate_missing_vectors(pool)
    if mode == "keyword":
        keyword_only_scores(pool, terms)
    else:
        FUSIONS[config.fusion](pool, config)
        mark_fresh(manager, pool)
        prefer_fresh(pool)
    if config.decay:
        extra_mtimes = (
            manager.read(lambda store: store.file_mtimes(source="extra"))
            if any(c.chunk.source == "extra" for c in pool)
            else None
        )
        apply_temporal_decay(
            pool,
            now=now,
            half_life_days=config.half_life_days,
            extra_mtimes=extra_mtimes,
            floor=config.decay_floor,
        )
    pool.sort(key=lambda c: (-c.score, c.chunk.path, c.chunk.start_line))
    pool = pool[:n_candidates]
    if config.centre_snippets:
        weights = term_weights(terms, [c.chunk.text for c in pool])
        line_vectors = manager.line_vectors if config.line_scoring else None
        focus_lines(pool, query_vector, weights, line_vectors)
    # The learned model was fitted on hybrid searches; remote rerankers read only text.
    rerank = reranker is not None and (mode == "hybrid" or reranker.remote)
    ranked = mmr_rerank(pool, lam=config.mmr_lambda, k=len(pool)) if config.mmr else pool
    for cand in ranked:
        cand.fused = cand.score
    unknown = manager.unknown_share(terms) if mode == "hybrid" else 0.0
    rescued = False
    threshold = min_score
    if mode == "hybrid":
        set_parts(ranked, unknown, manager.term_coverage(terms, [c.chunk.seq for c in ranked]))
    if mode == "hybrid" and calibration is not None:
        apply_calibration(ranked, calibration)
        ranked = demote_echoes(ranked)
        if threshold is None:
            threshold = config.min_score
        kept = cut_off_topic(ranked, calibration, threshold, unknown)
    elif mode == "hybrid":
        ranked = demote_echoes(ranked)
        if threshold is None:
            threshold = config.raw_min_score
        kept, rescued = apply_min_score(ranked, min_score=threshold)
    else:
        kept = ranked  # keyword-only mode returns its best even below min_score
    ranking = _Ranking(
        kept, pool, mode, legs, terms, rescued, keywords is not None, query_vector, rerank
    )
    ranking.estimated, ranking.unknown = estimated, unknown
    if mode == "hybrid":
        ranking.evidence = {
            "best_coverage": round(max((c.coverage for c in ranked), default=0.0), 6),
            "best_vector": round(max((c.vector for c in ranked if c.has_vector), default=0.0), 6),
            "unknown": round(unknown, 6),
        }
    ranking.threshold = threshold if mode == "hybrid" else None
    return ranking


def mark_fresh(manager: IndexManager, candidates: Sequence[Candidate]) -> None:
    """Set ``fresh`` on the candidates whose file changed in the last ``FRESH_SECONDS``."""
    paths = list({c.chunk.path for c in candidates})
    if not paths:
        return
    rows = manager.read(lambda store: store.file_rows(paths))
    since = (time.time() - FRESH_SECONDS) * 1e9
    for cand in candidates:
        row = rows.get(cand.chunk.path)
        cand.fresh = row is not None and row.mtime_ns >= since


#: How much a just-written keyword match's fused score is raised (``prefer_fresh``).
FRESH_BOOST = 1.05


def prefer_fresh(pool: Sequence[Candidate]) -> None:
    """Raise the fused score of the candidates written a moment ago that match the query's
    words by :data:`FRESH_BOOST`: a fact the agent just wrote is what the next question is
    most likely about, ahead of an older note that says nearly the same (the port that moved,
    the tool that replaced another). Nothing changes when every candidate is fresh (a
    workspace copied in a minute ago) or none is."""
    if all(c.fresh for c in pool):
        return
    for cand in pool:
        if cand.fresh and cand.keyword_hit:
            cand.score *= FRESH_BOOST


def _placeholder(seq: int) -> ChunkRow:
    return ChunkRow(seq, "", "", "", 0, 0, "")


__all__ = [
    "Candidate",
    "SearchResponse",
    "SearchResult",
    "apply_min_score",
    "apply_temporal_decay",
    "complete_legs",
    "decay_factor",
    "embed_candidates",
    "estimate_missing_vectors",
    "file_date",
    "keyword_only_scores",
    "merge_hybrid",
    "mmr_rerank",
    "run_search",
]
