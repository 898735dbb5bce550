"""The rerank stage: a second opinion on the best fused candidates, before MMR.

- :mod:`memdir.rerank.base`: the :class:`Reranker` protocol and :class:`RerankDoc`;
- :mod:`memdir.rerank.registry`: ``[rerank] provider`` → reranker (``learned``, ``http``,
  ``llm``, ``none``);
- :mod:`memdir.rerank.features`: line-level scores and the features of each candidate;
- :mod:`memdir.rerank.stage`: the stage itself, as :func:`memdir.search.run_search` runs it.
"""

from memdir.rerank.base import RerankDoc, Reranker
from memdir.rerank.registry import create_reranker, register_reranker, reranker_names

__all__ = ["RerankDoc", "Reranker", "create_reranker", "register_reranker", "reranker_names"]
