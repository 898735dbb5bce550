"""How the inspector shows a score's parts (memdir.ui.present)."""

from __future__ import annotations

from memdir.config.settings import SearchConfig
from memdir.ui.present import score_parts, score_sum, scoring_note

EXPLAIN = {
    "fused": 0.665,
    "coverage": 1.0,
    "vector": 0.8,
    "vector_estimated": False,
    "text": 0.35,
    "decay": 1.0,
    "age_days": None,
    "mmr_rank": 1,
    "rerank": None,
    "new_stage": 0.25,
}


def test_parts_come_in_a_fixed_order_with_new_ones_last() -> None:
    labels = [row["label"] for row in score_parts(EXPLAIN)]
    assert labels[:4] == ["vector", "keyword", "decay", "age"]
    assert labels[4:7] == ["fused", "term coverage", "vector estimated"]
    assert labels[-1] == "new stage"
    assert {row["key"]: row["text"] for row in score_parts(EXPLAIN)}["vector_estimated"] == "false"


def test_the_sum_gives_the_fused_score_back_when_the_score_is_calibrated() -> None:
    config = SearchConfig()
    calibrated = score_sum(config, "hybrid", EXPLAIN, 0.93)  # the relevance, not the sum
    assert calibrated == "fused: 0.7×0.800 + 0.3×0.350 = 0.665"
    raw = {k: v for k, v in EXPLAIN.items() if k != "fused"}
    assert score_sum(config, "hybrid", raw, 0.665) == "0.7×0.800 + 0.3×0.350 = 0.665"
    assert score_sum(config, "hybrid", raw, 0.9) == ""  # not this formula: nothing shown
    assert "estimated chance" in scoring_note(config, "hybrid", calibrated=True)
    assert scoring_note(config, "hybrid").startswith("score = 0.7·vector + 0.3·keyword")
