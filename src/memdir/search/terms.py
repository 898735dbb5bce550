"""A search's terms in the candidates' text: each chunk's tokens (memoised), whether Chinese
must be segmented, and how much each query term tells (its rarity among the candidates).

Placement (:mod:`memdir.search.placement`), keyword-only scoring (:mod:`memdir.search.fusion`)
and the line features of the rerank stage (:mod:`memdir.search.features`) all count terms the
same way, from here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from functools import lru_cache

from memdir.text import has_cjk, index_tokens


# The same chunks come back search after search: tokenising them once saves most of a
# keyword search's CPU time (measured: 40 of 170 ms at 11k chunks).
@lru_cache(maxsize=4096)
def chunk_tokens(text: str, segment_cjk: bool = True) -> tuple[str, ...]:
    """A chunk's index tokens, memoised (``segment_cjk=False``: CJK runs left whole, enough
    when no query term has CJK characters, and jieba is not loaded)."""
    return tuple(index_tokens(text, segment_cjk=segment_cjk))


def needs_segmentation(terms: Iterable[str]) -> bool:
    """Whether any of ``terms`` has CJK characters (only then must CJK text be segmented)."""
    return any(has_cjk(term) for term in terms)


def term_weights(terms: Sequence[str], texts: Sequence[str]) -> dict[str, float]:
    """Weight each query term by its rarity among ``texts`` (the candidates): a term found in
    every candidate tells the snippet little, a rare one a lot."""
    if not terms:
        return {}
    segment = needs_segmentation(terms)
    token_sets = [set(chunk_tokens(t, segment)) for t in texts]
    n = len(token_sets)
    return {
        term: math.log(1.0 + (n + 1) / (sum(1 for ts in token_sets if term in ts) + 0.5))
        for term in terms
    }


__all__ = ["chunk_tokens", "needs_segmentation", "term_weights"]
