"""Fusion (docs/design.md#search, step 4): the two legs of each candidate become one score.

``search.fusion`` chooses how (:data:`FUSIONS`): ``weighted``, ``w_v·vector + w_t·text``
(:func:`merge_hybrid`), or ``rrf``, reciprocal rank fusion (:func:`merge_rrf`). A keyword match
written a moment ago is then raised a little (:func:`prefer_fresh`). Without an embedder the
keyword candidates are scored on their own (:func:`keyword_only_scores`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from memdir.index.manager import IndexManager
from memdir.search.relevance import FRESH_SECONDS
from memdir.search.terms import chunk_tokens, needs_segmentation
from memdir.search.types import Candidate


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


__all__ = [
    "FRESH_BOOST",
    "FUSIONS",
    "keyword_only_scores",
    "mark_fresh",
    "merge_hybrid",
    "merge_rrf",
    "prefer_fresh",
]
