"""Rerankers: a second opinion on the best placed passages of a search (the providers only).

- :mod:`memdir.rerank.base`: the :class:`Reranker` protocol, :class:`RerankDoc` and the
  features a reranker is given;
- :mod:`memdir.rerank.registry`: ``[rerank] provider`` → reranker (``learned``, ``http``,
  ``llm``, ``none``).

The stage that runs them, and the line features it computes, are part of the search pipeline:
:mod:`memdir.search.rerank_stage` and :mod:`memdir.search.features`.
"""

from memdir.rerank.base import RerankDoc, Reranker
from memdir.rerank.registry import create_reranker, register_reranker, reranker_names

__all__ = ["RerankDoc", "Reranker", "create_reranker", "register_reranker", "reranker_names"]
