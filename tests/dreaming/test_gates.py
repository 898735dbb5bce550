"""gate_checks: every gate a candidate passes or fails, and the failures ``dream`` prints."""

from __future__ import annotations

from memdir.dreaming.scoring import MANUAL_GATES, SCHEDULE_GATES, gate_checks, gate_failures


def test_manual_gates_each_checked() -> None:
    checks = gate_checks(0.74, recalls=3, unique_queries=1, note_age_days=50, gates=MANUAL_GATES)
    assert [(c.name, c.required, c.passed) for c in checks] == [
        ("score", "≥ 0.75", False),
        ("recalls", "≥ 3", True),
        ("unique queries", "≥ 2", False),
    ]
    assert [c.failure() for c in checks if not c.passed] == [
        "score 0.740 < 0.75",
        "unique queries 1 < 2",
    ]


def test_schedule_gates_add_the_note_age() -> None:
    checks = gate_checks(0.9, recalls=5, unique_queries=3, note_age_days=31, gates=SCHEDULE_GATES)
    assert checks[-1].to_dict() == {
        "name": "note age",
        "required": "≤ 30 days",
        "actual": 31,
        "passed": False,
    }
    assert gate_failures(
        0.9, recalls=5, unique_queries=3, note_age_days=31, gates=SCHEDULE_GATES
    ) == ["note is 31 days old > 30"]
    undated = gate_checks(
        0.9, recalls=5, unique_queries=3, note_age_days=None, gates=SCHEDULE_GATES
    )
    assert [c.name for c in undated] == ["score", "recalls", "unique queries"]


def test_a_score_at_the_gate_passes() -> None:
    (score, *_) = gate_checks(
        0.75, recalls=3, unique_queries=2, note_age_days=None, gates=MANUAL_GATES
    )
    assert score.passed
