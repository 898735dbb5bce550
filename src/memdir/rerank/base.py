"""The Reranker protocol: what a rerank stage is given and what it answers.

A reranker sees the query and the top candidates of fusion, each as its text plus the features
search computed for it (:mod:`memdir.rerank.features`), and returns one relevance score per
candidate, in the same order; higher is better. Search then orders the candidates by it
(:func:`memdir.rerank.stage.rerank_candidates`). A remote reranker that fails raises
:class:`~memdir.errors.ProviderError`; the stage keeps the fused order and warns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class RerankDoc:
    """One candidate as a reranker sees it.

    Attributes:
        text: what the candidate says (the chunk's text).
        features: numbers search computed for it (see :data:`memdir.rerank.features.FEATURES`).
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


__all__ = ["RerankDoc", "Reranker"]
