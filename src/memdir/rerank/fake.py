"""A scripted reranker for tests: answers from a queue, or by a rule, and records calls."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

from memdir.rerank.base import RerankDoc


class ScriptedReranker:
    """Answers each call with the next scripted item: a list of scores, or an exception to
    raise. With nothing queued it scores by ``rule(query, doc)`` (default: the reverse of the
    order given, so a test can see that the stage reordered).

    Attributes:
        calls: ``(query, docs)`` of every call, oldest first.
    """

    name = "fake"

    def __init__(
        self,
        rule: Callable[[str, RerankDoc], float] | None = None,
        *,
        remote: bool = True,
    ) -> None:
        self.rule = rule
        self.remote = remote
        self.calls: list[tuple[str, list[RerankDoc]]] = []
        self._queue: deque[list[float] | Exception] = deque()

    def enqueue(self, answer: list[float] | Exception) -> None:
        """Script the next answer."""
        self._queue.append(answer)

    def rerank(self, query: str, docs: Sequence[RerankDoc]) -> list[float]:
        self.calls.append((query, list(docs)))
        if self._queue:
            answer = self._queue.popleft()
            if isinstance(answer, Exception):
                raise answer
            return list(answer)
        if self.rule is not None:
            return [self.rule(query, doc) for doc in docs]
        return [float(i) for i in range(len(docs))]


__all__ = ["ScriptedReranker"]
