"""The deep-phase score on hand-computed examples, the gates at their boundaries, the caps."""

from __future__ import annotations

import math
from datetime import date, datetime

import pytest

from memdir.dreaming.phases import deep_phase
from memdir.dreaming.scoring import (
    MANUAL_GATES,
    SCHEDULE_GATES,
    Factors,
    conceptual,
    consolidation,
    diversity,
    frequency,
    gate_failures,
    recency,
    relevance,
    rem_signal,
    score_entry,
)
from tests.dreaming.factories import make_entry

NOW = datetime(2026, 11, 30, 9, 0)


@pytest.mark.parametrize(
    ("recalls", "expected"),
    [(0, 0.0), (1, 0.2890648), (4, 0.6711877), (10, 1.0), (50, 1.0)],
)
def test_frequency_is_log_scaled_and_capped(recalls: int, expected: float) -> None:
    assert frequency(recalls) == pytest.approx(expected, abs=1e-6)


def test_relevance_is_the_mean_recall_score() -> None:
    assert relevance(2.1, 3) == pytest.approx(0.7)
    assert relevance(0.0, 0) == 0.0
    assert relevance(9.0, 3) == 1.0  # clamped


@pytest.mark.parametrize(
    ("queries", "days", "expected"), [(3, 2, 0.6), (1, 4, 0.8), (5, 1, 1.0), (9, 9, 1.0)]
)
def test_diversity_takes_the_larger_of_queries_and_days(
    queries: int, days: int, expected: float
) -> None:
    assert diversity(queries, days) == pytest.approx(expected)


@pytest.mark.parametrize(("age", "expected"), [(0, 1.0), (7, 2**-0.5), (14, 0.5), (28, 0.25)])
def test_recency_has_a_14_day_half_life(age: float, expected: float) -> None:
    assert recency(age) == pytest.approx(expected)
    assert recency(-3) == 1.0  # a clock that went backwards is not a bonus


def test_consolidation_is_the_recall_span_over_a_week() -> None:
    day = date(2026, 11, 20)
    assert consolidation(day, day) == 0.0
    assert consolidation(day, date(2026, 11, 23)) == pytest.approx(3 / 7)
    assert consolidation(day, date(2026, 11, 27)) == 1.0
    assert consolidation(day, date(2026, 12, 20)) == 1.0


def test_conceptual_and_rem_signal_use_the_themes() -> None:
    themes = {"redis": 0.9, "锁": 0.8}
    assert conceptual(("redis", "port", "锁", "ttl"), themes) == 0.5
    assert conceptual((), themes) == 0.0
    assert rem_signal(("port", "锁", "redis"), themes) == 0.9
    assert rem_signal(("port",), themes) == 0.0


def test_hand_computed_score() -> None:
    # n = 4, total 2.4, 3 queries, 2 days, last recall 7 days ago, first 5 days before that,
    # tags (redis, lock) with the theme redis at 0.9.
    entry = make_entry(
        recalls=4,
        total_score=2.4,
        queries=3,
        days=("2026-11-23", "2026-11-18"),
        tags=("redis", "lock"),
        first="2026-11-18T09:00",
        last="2026-11-23T09:00",
    )
    factors = score_entry(entry, now=NOW, themes={"redis": 0.9})
    assert factors.frequency == pytest.approx(0.6711877)
    assert factors.relevance == pytest.approx(0.6)
    assert factors.diversity == pytest.approx(0.6)
    assert factors.recency == pytest.approx(0.7071068)
    assert factors.consolidation == pytest.approx(5 / 7)
    assert factors.conceptual == pytest.approx(0.5)
    assert factors.light_boost == 0.0
    assert factors.rem_boost == pytest.approx(0.081)
    parts = factors.contributions()
    assert parts["frequency"] == pytest.approx(0.1610851)
    assert parts["relevance"] == pytest.approx(0.18)
    assert parts["diversity"] == pytest.approx(0.09)
    assert parts["recency"] == pytest.approx(0.1060660)
    assert parts["consolidation"] == pytest.approx(0.0714286)
    assert parts["conceptual"] == pytest.approx(0.03)
    assert factors.base == pytest.approx(0.6385796)
    assert factors.score == pytest.approx(0.7195796)


def test_light_boost_adds_up_to_six_hundredths() -> None:
    entry = make_entry(recalls=10, total_score=10.0, queries=5, last="2026-11-30T09:00")
    without = score_entry(entry, now=NOW, themes={})
    half = score_entry(entry, now=NOW, themes={}, light_signal=0.5)
    assert half.score - without.score == pytest.approx(0.03)


def test_boosts_are_capped() -> None:
    wild = Factors(1, 1, 1, 1, 1, 1, light=7.0, rem=3.0)
    assert wild.light_boost == pytest.approx(0.06)
    assert wild.rem_boost == pytest.approx(0.09)
    assert wild.score == pytest.approx(1.15)
    assert Factors(0, 0, 0, 0, 0, 0, light=-1.0, rem=math.nan).score == 0.0
    assert Factors(2, 2, 2, 2, 2, 2).base == pytest.approx(1.0)


def _fails(score: float, recalls: int = 3, queries: int = 2, age: int | None = None) -> list[str]:
    return gate_failures(
        score, recalls=recalls, unique_queries=queries, note_age_days=age, gates=MANUAL_GATES
    )


def test_manual_gates_at_their_boundaries() -> None:
    assert _fails(0.75) == []
    assert _fails(0.7499) == ["score 0.750 < 0.75"]
    assert _fails(0.75, recalls=2) == ["recalls 2 < 3"]
    assert _fails(0.75, queries=1) == ["unique queries 1 < 2"]
    assert _fails(0.9, age=400) == []  # manual runs have no age limit
    # A sum that is 0.75 in exact arithmetic but not in floating point still passes.
    assert 0.3 + 0.45 - 1e-15 < 0.75
    assert _fails(0.3 + 0.45 - 1e-15) == []


def test_schedule_gates_at_their_boundaries() -> None:
    def fails(score: float, recalls: int = 3, queries: int = 3, age: int = 30) -> list[str]:
        return gate_failures(
            score,
            recalls=recalls,
            unique_queries=queries,
            note_age_days=age,
            gates=SCHEDULE_GATES,
        )

    assert fails(0.8) == []
    assert fails(0.7999) == ["score 0.800 < 0.8"]
    assert fails(0.8, recalls=2) == ["recalls 2 < 3"]
    assert fails(0.8, queries=2) == ["unique queries 2 < 3"]
    assert fails(0.8, age=31) == ["note is 31 days old > 30"]


def test_schedule_promotes_at_most_ten_per_run_best_first() -> None:
    entries = [
        make_entry(
            path=f"memory/2026-11-{10 + i:02d}.md",
            recalls=10,
            total_score=10.0 * (0.8 + i / 100),
            queries=5,
            days=("2026-11-30", "2026-11-29", "2026-11-28", "2026-11-27", "2026-11-20"),
            first="2026-11-20T09:00",
        )
        for i in range(12)
    ]
    candidates = deep_phase(entries, now=NOW, themes={}, light=[], gates=SCHEDULE_GATES)
    selected = [c for c in candidates if c.selected]
    assert len(selected) == 10
    assert min(c.score for c in selected) > max(c.score for c in candidates if not c.selected)
    assert all("over the limit of 10 per run" in c.failures for c in candidates[10:])
    manual = deep_phase(entries, now=NOW, themes={}, light=[], gates=MANUAL_GATES)
    assert all(c.selected for c in manual)


def test_promoted_entries_are_scored_but_never_selected() -> None:
    entry = make_entry(recalls=10, total_score=10.0, queries=5, promoted_at="2026-11-29T03:00")
    (candidate,) = deep_phase([entry], now=NOW, themes={}, light=[], gates=MANUAL_GATES)
    assert candidate.score > 0.75
    assert not candidate.selected and candidate.status == "promoted earlier"
