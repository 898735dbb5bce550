"""Maximal marginal relevance (docs/design.md#search, step 6): the candidates reordered so that
near-repeats of what ranks above them move down (notes repeat themselves).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from memdir.search.types import Candidate
from memdir.text import jaccard, similarity_tokens


@lru_cache(maxsize=2048)
def _similarity_tokens(text: str) -> frozenset[str]:
    return similarity_tokens(text)


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


__all__ = ["mmr_order", "mmr_rerank"]
