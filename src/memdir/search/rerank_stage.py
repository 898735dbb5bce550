"""The rerank stage of :func:`memdir.search.pipeline.run_search`, the last before the results
(docs/design.md#search, step 9).

The best ``top_n`` candidates (after fusion, MMR and ``min_score``) are first placed as
distinct passages (what an agent would read: :func:`memdir.search.placement.place_results` trims
overlapping chunks and widens each to the snippet budget), so the reranker compares passages
that never repeat a line. Then:

1. the lines of each passage are scored (:func:`memdir.search.features.score_lines`) and the
   passage's features computed (:func:`memdir.search.features.candidate_features`);
2. the reranker scores each passage from its text and features; passages are ordered by that
   score (``explain["rerank"]``) and the first ``max_results`` returned.

Reranking chunks before MMR (and before they were trimmed into passages) was measured first and
lost 2–4 points of LoCoMo dev seen@6: overlapping chunks of one passage crowd the top
(docs/benchmarks-retrieval.md).

A reranker that fails (:class:`~memdir.errors.ProviderError`) or answers with the wrong number
of scores leaves the fused order, and a warning says why. A result's ``score`` is unchanged
(its calibrated relevance, or the fused score for a model without calibration): the candidates
were already cut at ``min_score`` with it, so a reranker can reorder results but never let in
one that search found too weak.

:func:`focus_lines` serves ``search.centre_snippets``: it gives each candidate chunk its best
line, which :func:`memdir.search.placement.place_results` centres the snippet on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memdir.errors import ProviderError
from memdir.rerank.base import RerankDoc, Reranker
from memdir.search.features import LineVectors, candidate_features, score_lines
from memdir.search.types import Candidate, SearchResult


def focus_lines(
    candidates: Sequence[Candidate],
    query_vector: Any,
    weights: Mapping[str, float],
    line_vectors: LineVectors | None,
) -> None:
    """Set each candidate's ``focus_line``: its best line by :func:`score_lines`."""
    texts = [c.chunk.text for c in candidates]
    lines = score_lines(texts, query_vector, weights, line_vectors, [c.vector for c in candidates])
    for cand, scored in zip(candidates, lines, strict=True):
        if len(scored.cosine) == cand.chunk.end_line - cand.chunk.start_line + 1:
            cand.focus_line = cand.chunk.start_line + scored.focus


def passage_features(
    passages: Sequence[SearchResult],
    query_vector: Any,
    weights: Mapping[str, float],
    line_vectors: LineVectors | None,
) -> list[dict[str, float]]:
    """The features of each placed passage (given in fused order, best first)."""
    texts = [p.snippet for p in passages]
    vectors = [float(p.explain.get("vector") or 0.0) for p in passages]
    lines = score_lines(texts, query_vector, weights, line_vectors, vectors)
    return candidate_features(
        texts,
        # The fused score the model was trained on (``score`` may be a calibrated relevance).
        [float(p.explain.get("fused", p.score)) for p in passages],
        vectors,
        [float(p.explain.get("text") or 0.0) for p in passages],
        lines,
        weights,
    )


def rerank_passages(
    reranker: Reranker,
    query: str,
    passages: Sequence[SearchResult],
    query_vector: Any,
    weights: Mapping[str, float],
    line_vectors: LineVectors | None,
    warnings: list[str],
) -> list[SearchResult]:
    """``passages`` ordered by the reranker (its score in ``explain["rerank"]``), or as given
    when it failed (a warning is added)."""
    if not passages:
        return []
    features = passage_features(passages, query_vector, weights, line_vectors)
    docs = [RerankDoc(p.snippet, f) for p, f in zip(passages, features, strict=True)]
    try:
        scores = reranker.rerank(query, docs)
    except ProviderError as exc:
        warnings.append(f"reranker {reranker.name} failed, fused order kept: {exc}")
        return list(passages)
    if len(scores) != len(passages):
        warnings.append(
            f"reranker {reranker.name} returned {len(scores)} scores for {len(passages)} "
            "passages: fused order kept"
        )
        return list(passages)
    for passage, score in zip(passages, scores, strict=True):
        passage.explain["rerank"] = round(float(score), 6)
    order = sorted(range(len(passages)), key=lambda i: (-scores[i], i))
    return [passages[i] for i in order]


__all__ = ["focus_lines", "passage_features", "rerank_passages"]
