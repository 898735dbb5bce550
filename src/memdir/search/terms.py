"""A search's terms in the candidates' text: each chunk's tokens (memoised), whether Chinese
must be segmented, and how much each query term tells (its rarity among the candidates).

Placement (:mod:`memdir.search.placement`), keyword-only scoring (:mod:`memdir.search.fusion`)
and the line features of the rerank stage (:mod:`memdir.search.features`) all count terms the
same way, from here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
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
    """Whether any of ``terms`` has CJK characters (only then must CJK text be segmented); for
    :class:`TermWeights`, whether the query's own words have."""
    if isinstance(terms, TermWeights):
        return terms.segment
    return any(has_cjk(term) for term in terms)


class TermWeights(dict[str, float]):
    """Term → weight, and whether text must be segmented to find them (``segment``): only
    when the query's own words have CJK characters. The Chinese translations of an English
    query's words (:mod:`memdir.bridge`) are then found as parts of the text's CJK runs
    (:func:`found_tokens`), so that an English search never loads jieba."""

    segment: bool = False
    #: Its terms with CJK characters, once counted (placement asks for every line).
    _cjk: tuple[int, tuple[str, ...]] | None = None

    def cjk_terms(self) -> tuple[str, ...]:
        if self._cjk is None or self._cjk[0] != len(self):
            self._cjk = (len(self), tuple(t for t in self if has_cjk(t)))
        return self._cjk[1]


def found_tokens(text: str, weights: Iterable[str]) -> tuple[str, ...]:
    """The tokens of ``text`` to look the terms of ``weights`` up in: its index tokens,
    segmented only when :func:`needs_segmentation`, plus each CJK term that an unsegmented
    CJK run holds."""
    segment = needs_segmentation(weights)
    tokens = chunk_tokens(text, segment)
    if segment:
        return tokens
    cjk = weights.cjk_terms() if isinstance(weights, TermWeights) else _cjk_of(weights)
    inside = tuple(t for t in cjk if t in text)
    return tokens + inside if inside else tokens


def _cjk_of(terms: Iterable[str]) -> tuple[str, ...]:
    return tuple(t for t in terms if has_cjk(t))


def term_weights(
    terms: Sequence[str], texts: Sequence[str], scale: Mapping[str, float] | None = None
) -> dict[str, float]:
    """Weight each query term by its rarity among ``texts`` (the candidates): a term found in
    every candidate tells the snippet little, a rare one a lot; times its ``scale`` when given
    (a translation's weight, :mod:`memdir.bridge`)."""
    out = TermWeights()
    if not terms:
        return out
    factor = scale or {}
    out.segment = needs_segmentation(t for t in terms if factor.get(t, 1.0) >= 1.0)
    probe = TermWeights(dict.fromkeys(terms, 1.0))
    probe.segment = out.segment
    token_sets = [set(found_tokens(t, probe)) for t in texts]
    n = len(token_sets)
    for term in terms:
        rarity = math.log(1.0 + (n + 1) / (sum(1 for ts in token_sets if term in ts) + 0.5))
        out[term] = factor.get(term, 1.0) * rarity
    return out


__all__ = ["TermWeights", "chunk_tokens", "found_tokens", "needs_segmentation", "term_weights"]
