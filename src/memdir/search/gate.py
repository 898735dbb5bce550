"""The off-topic gate (docs/design.md#search, step 7): when a search is clearly about nothing
this memory holds, it returns nothing instead of its least bad chunks.

It reads one search's *evidence* (:func:`evidence`), a few numbers about its candidates as a
whole:

- ``best_vector``: the best vector leg (on the embedding model's cosine scale; a note of the
  other language's similarity across languages, :mod:`memdir.search.across`), and
  ``best_same``: the best among notes in the query's language;
- ``best_cross``, ``best_centred``, ``best_companion``: among notes of the other language,
  the best cross-lingual similarity, centred cosine and companion cosine (0 without such
  notes, ``no_other`` then 1);
- ``best_coverage``: the most of the query terms' weight one candidate holds;
- ``unknown``: the share of the query's terms of which no form (the term or a translation)
  occurs in the index, and ``unknown_soft``: the same with a term found only through a
  translation counted by that translation's weight, a rare sense little, so that a word of
  the other language is never evidence of off-topic on its own, and a common word's loose
  translation ("make" → 做) is little evidence that the memory knows the topic.

Two gates read it: :class:`Gate`, three bounds (the first design, for a model measured
without notes of two languages), and :class:`OffTopicModel`, a logistic model of the
evidence fitted on labelled searches (``benchmarks/fit_gate.py``): with notes in two
languages a translated question's best candidate has words and cosines in the range of an
off-topic question's, and no three bounds kept both apart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from memdir.search.across import COMPANION
from memdir.search.types import Candidate


class OffTopic(Protocol):
    """A gate: whether a search's evidence (:func:`evidence`) says it is clearly off-topic."""

    def off_topic(self, evidence: Mapping[str, float]) -> bool: ...


@dataclass(frozen=True)
class Gate:
    """Off-topic when every part is below its bound.

    Attributes:
        coverage: no candidate holds this share of the query terms' weight, and
        unknown: at least this share of the query's terms occur in no chunk, and
        vector: no candidate's cosine reaches this (the embedding model's own scale).
    """

    coverage: float
    unknown: float
    vector: float

    def off_topic(self, evidence: Mapping[str, float]) -> bool:
        return (
            evidence["best_coverage"] < self.coverage
            and evidence["unknown"] >= self.unknown
            and evidence["best_vector"] < self.vector
        )


@dataclass(frozen=True)
class OffTopicModel:
    """Off-topic when a logistic model of the evidence gives at least ``threshold``.

    Attributes:
        weights: evidence key → coefficient (on the raw values).
        bias: the intercept.
        threshold: the probability from which a search is off-topic.
    """

    weights: Mapping[str, float]
    bias: float
    threshold: float

    def probability(self, evidence: Mapping[str, float]) -> float:
        z = self.bias + sum(w * evidence.get(k, 0.0) for k, w in self.weights.items())
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def off_topic(self, evidence: Mapping[str, float]) -> bool:
        return self.probability(evidence) >= self.threshold


def soft_unknown(known: Sequence[float]) -> float:
    """``unknown_soft`` of a query from how known each of its terms is, in [0, 1] (1: the term
    itself occurs in the index; a translation's weight when only translations do; 0: no
    form does)."""
    if not known:
        return 0.0
    return sum(1.0 - min(1.0, max(0.0, k)) for k in known) / len(known)


def evidence(ranked: Sequence[Candidate], unknown: float, unknown_soft: float) -> dict[str, float]:
    """The numbers a gate reads about one search's candidates (module docstring)."""
    vectors = [c for c in ranked if c.has_vector]
    other = [c.across for c in vectors if c.across is not None]
    centred = [a[0] for a in other]
    companion = [a[1] for a in other if a[1] is not None]
    cross = [a[0] + COMPANION * (a[1] if a[1] is not None else a[0]) for a in other]
    return {
        "best_coverage": max((c.coverage for c in ranked), default=0.0),
        "best_vector": max((c.vector for c in vectors), default=0.0),
        "best_same": max((c.vector for c in vectors if c.cosine is None), default=0.0),
        "best_cross": max(0.0, max(cross, default=0.0)),
        "best_centred": max(0.0, max(centred, default=0.0)),
        "best_companion": max(0.0, max(companion, default=0.0)),
        "no_other": 0.0 if other else 1.0,
        "unknown": unknown,
        "unknown_soft": unknown_soft,
    }


__all__ = ["Gate", "OffTopic", "OffTopicModel", "evidence", "soft_unknown"]
