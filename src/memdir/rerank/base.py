"""The Reranker protocol: what a rerank stage is given and what it answers.

A reranker sees the query and the top passages of fusion, each as its text plus the features
search computed for it (:data:`FEATURES`, :mod:`memdir.search.features`), and returns one
relevance score per passage, in the same order; higher is better. Search then orders the
passages by it (:func:`memdir.search.rerank_stage.rerank_passages`). A remote reranker that
fails raises :class:`~memdir.errors.ProviderError`; the stage keeps the fused order and warns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

#: The features search computes for each passage it gives a reranker
#: (:func:`memdir.search.features.candidate_features`), in the order a learned model reads them.
FEATURES = (
    "fused",  # the fused score (vector and keyword legs)
    "fused_gap",  # fused score minus the best fused score of this query's candidates
    "vector",  # the chunk's cosine similarity
    "text",  # the chunk's keyword score (saturated BM25)
    "rank",  # 1 / (1 + position in the fused order)
    "line_cos",  # the best line's cosine (the chunk's cosine when no line has a vector)
    "line_cos_gap",  # line_cos minus the best line_cos of this query's candidates
    "line_cos_lift",  # line_cos minus the chunk's cosine
    "line_cov",  # the best line's query-term coverage
    "line_cov_gap",  # line_cov minus the best line_cov of this query's candidates
    "chunk_cov",  # the chunk's query-term coverage
    "line_score",  # the best line's combined score (memdir.search.features.LINE_COVERAGE_WEIGHT)
)


@dataclass(frozen=True)
class RerankDoc:
    """One candidate as a reranker sees it.

    Attributes:
        text: what the candidate says (the chunk's text).
        features: numbers search computed for it (see :data:`FEATURES`).
    """

    text: str
    features: Mapping[str, float] = field(default_factory=dict)


@runtime_checkable
class Reranker(Protocol):
    """Scores candidates for a query.

    Attributes:
        name: registry name (``learned``, ``http``, ``llm``, ``fake``).
        remote: True when the reranker calls a service (it may fail or be slow; the stage
            then keeps the fused order).
    """

    name: str
    remote: bool

    def rerank(self, query: str, docs: Sequence[RerankDoc]) -> list[float]:
        """One score per doc, in the order given; higher means more relevant.

        Raises:
            ProviderError: the reranker could not score (remote failure, malformed answer).
        """
        ...


__all__ = ["FEATURES", "RerankDoc", "Reranker"]
