"""Listwise reranking by the configured language model (``[llm]``): one call per search.

The candidates are numbered and shown to the model with the question (each cut to
:data:`DOC_CHARS` characters); the system prompt is ``lifecycle/prompts/rerank.md``. The reply
must be exactly one JSON array of distinct candidate numbers, best first; anything else is a
:class:`~memdir.errors.ProviderResponseError`, and the rerank stage keeps the fused order.
Candidates the model leaves out rank after the ones it names, in their fused order.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from memdir.errors import ProviderResponseError
from memdir.llm.base import LLM, Message
from memdir.llm.prompts import load_prompt
from memdir.rerank.base import RerankDoc
from memdir.safety.untrusted import escape_untrusted

#: Characters of each candidate shown to the model.
DOC_CHARS = 700
#: Reply budget: a list of numbers.
MAX_REPLY_TOKENS = 200


class LLMReranker:
    """Ranks candidates with one call to ``llm``.

    Args:
        llm: the chat model.
        timeout: seconds allowed for the call.
    """

    name = "llm"
    remote = True

    def __init__(self, llm: LLM, *, timeout: float = 10.0) -> None:
        self.llm = llm
        self.timeout = timeout

    def rerank(self, query: str, docs: Sequence[RerankDoc]) -> list[float]:
        if not docs:
            return []
        # The notes are memory text: escaped like everywhere else (docs/design.md#working-memory).
        listing = "\n\n".join(
            f"[{i}] {escape_untrusted(' '.join(doc.text.split())[:DOC_CHARS])}"
            for i, doc in enumerate(docs, 1)
        )
        prompt = f"Question: {query}\n\nNotes:\n\n{listing}"
        reply = self.llm.complete(
            [Message("user", prompt)],
            system=load_prompt("rerank"),
            max_tokens=MAX_REPLY_TOKENS,
            timeout=self.timeout,
        )
        order = parse_ranking(reply, len(docs))
        n = len(docs)
        scores = [-(i + 1) / (n + 1) for i in range(n)]  # unnamed: below 0, fused order
        for position, number in enumerate(order):
            scores[number - 1] = float(n - position)
        return scores


def parse_ranking(reply: str, n: int) -> list[int]:
    """The candidate numbers (1-based) in ``reply``, strictly one JSON array of distinct
    integers in ``1..n`` (surrounding whitespace allowed).

    Raises:
        ProviderResponseError: anything else.
    """
    text = reply.strip()
    preview = text if len(text) <= 80 else text[:80] + "…"
    try:
        value = json.loads(text)
    except ValueError:
        raise ProviderResponseError(
            f"llm reranker: the reply is not a JSON array of numbers: {preview!r}"
        ) from None
    if not isinstance(value, list) or not all(
        isinstance(x, int) and not isinstance(x, bool) for x in value
    ):
        raise ProviderResponseError(f"llm reranker: expected a list of numbers, got {preview!r}")
    if any(not 1 <= x <= n for x in value) or len(set(value)) != len(value):
        raise ProviderResponseError(
            f"llm reranker: numbers must be distinct and within 1..{n}, got {preview!r}"
        )
    return list(value)


__all__ = ["DOC_CHARS", "LLMReranker", "parse_ranking"]
