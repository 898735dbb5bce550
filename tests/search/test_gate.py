"""The off-topic gate (``search/gate.py``): a search's evidence, read whole, and the two gates
that read it."""

from __future__ import annotations

import pytest

from memdir.index.base import ChunkRow
from memdir.search.across import COMPANION
from memdir.search.gate import Gate, OffTopicModel, evidence, soft_unknown
from memdir.search.types import Candidate


def _cand(
    vector: float,
    coverage: float = 0.0,
    *,
    across: tuple[float, float | None] | None = None,
    has_vector: bool = True,
) -> Candidate:
    cand = Candidate(ChunkRow(1, "a.md", "", "text", 1, 1, ""), vector=vector)
    cand.has_vector, cand.coverage, cand.across = has_vector, coverage, across
    if across is not None:
        cand.cosine = vector - 0.05  # its plain cosine, replaced by the cross-lingual value
    return cand


def test_evidence_reads_each_language_apart() -> None:
    ranked = [
        _cand(0.86, 0.2),  # the query's language
        _cand(0.88, 0.1, across=(0.30, 0.40)),  # the other language, with a companion code
        _cand(0.84, 0.5, across=(0.35, None)),  # … without one: its centred cosine stands in
        _cand(0.99, 0.0, has_vector=False),  # not embedded yet: no vector evidence
    ]
    got = evidence(ranked, unknown=0.25, unknown_soft=0.4)
    assert got["best_vector"] == pytest.approx(0.88)
    assert got["best_same"] == pytest.approx(0.86)
    assert got["best_coverage"] == pytest.approx(0.5)
    assert got["best_centred"] == pytest.approx(0.35)
    assert got["best_companion"] == pytest.approx(0.40)
    assert got["best_cross"] == pytest.approx(max(0.30 + COMPANION * 0.40, 0.35 * (1 + COMPANION)))
    assert got["no_other"] == 0.0
    assert (got["unknown"], got["unknown_soft"]) == (0.25, 0.4)


def test_evidence_without_notes_of_the_other_language() -> None:
    got = evidence([_cand(0.83, 0.1)], unknown=1.0, unknown_soft=1.0)
    assert got["no_other"] == 1.0
    assert got["best_cross"] == got["best_centred"] == got["best_companion"] == 0.0
    assert evidence([], unknown=0.0, unknown_soft=0.0)["best_vector"] == 0.0


def test_a_term_known_only_through_a_translation_counts_by_its_weight() -> None:
    assert soft_unknown([]) == 0.0
    assert soft_unknown([1.0, 1.0]) == 0.0  # both terms occur as written
    assert soft_unknown([0.0, 0.0]) == 1.0  # no form of either occurs
    assert soft_unknown([1.0, 0.5]) == pytest.approx(0.25)  # one found through a loose sense
    assert soft_unknown([1.7, -0.2]) == pytest.approx(0.5)  # clamped to [0, 1]


def test_the_bounds_gate_needs_every_part_below_its_bound() -> None:
    gate = Gate(coverage=0.3, unknown=0.6, vector=0.87)
    off = {"best_coverage": 0.1, "unknown": 0.8, "best_vector": 0.82}
    assert gate.off_topic(off)
    assert not gate.off_topic({**off, "best_coverage": 0.5})
    assert not gate.off_topic({**off, "unknown": 0.2})
    assert not gate.off_topic({**off, "best_vector": 0.9})


def test_the_model_gate_is_a_logistic_model_with_a_threshold() -> None:
    model = OffTopicModel({"unknown": 8.0, "best_vector": -10.0}, bias=4.0, threshold=0.8)
    off = {"unknown": 1.0, "best_vector": 0.8}  # z = 4 → 0.982
    on = {"unknown": 0.0, "best_vector": 0.9}  # z = -5 → 0.007
    assert model.probability(off) == pytest.approx(0.98201, abs=1e-5)
    assert model.off_topic(off) and not model.off_topic(on)
    assert not OffTopicModel(model.weights, model.bias, threshold=0.99).off_topic(off)
    assert model.probability({}) == pytest.approx(0.98201, abs=1e-5)  # a missing part is 0
    assert OffTopicModel({"x": 1e6}, 0.0, 0.5).probability({"x": 1.0}) == pytest.approx(1.0)
