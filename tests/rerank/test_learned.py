"""The offline learned reranker: its shipped weights, the file format, and scoring."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memdir.config.settings import load_config
from memdir.errors import ConfigError
from memdir.rerank import RerankDoc, create_reranker, reranker_names
from memdir.rerank.base import FEATURES
from memdir.rerank.learned import LearnedReranker, LogisticModel, load_model


def test_shipped_weights_load_and_use_known_features() -> None:
    model = load_model()
    assert model.features and set(model.features) <= set(FEATURES)
    assert "script" in model.trained or "note" in model.trained
    assert isinstance(create_reranker(load_config(None)), LearnedReranker)  # the default


def test_names() -> None:
    assert reranker_names() == ["http", "learned", "llm", "none"]
    assert create_reranker(load_config(None, overrides={"rerank": {"provider": "none"}})) is None


def test_scores_follow_the_weights() -> None:
    model = LogisticModel(("vector", "line_cov"), (0.5, 0.0), (0.1, 1.0), (2.0, 1.0), 0.0, {})
    rr = LearnedReranker(model)
    docs = [
        RerankDoc("a", {"vector": 0.5, "line_cov": 0.0}),
        RerankDoc("b", {"vector": 0.6, "line_cov": 0.0}),
        RerankDoc("c", {"vector": 0.5, "line_cov": 1.0}),
    ]
    a, b, c = rr.rerank("q", docs)
    assert a == pytest.approx(0.5)
    assert b > c > a  # 2.0·(0.1/0.1) beats 1.0·1.0
    assert all(0 < s < 1 for s in (a, b, c))


def test_round_trip_and_bad_files(tmp_path: Path) -> None:
    model = LogisticModel(("fused",), (0.1,), (0.2,), (1.5,), -0.3, {"seed": 1})
    path = tmp_path / "w.json"
    path.write_text(json.dumps(model.to_dict()))
    assert load_model(path) == model

    for bad in (
        {**model.to_dict(), "format": 99},
        {**model.to_dict(), "features": ["no_such_feature"]},
        {**model.to_dict(), "coef": [1.0, 2.0]},
        {**model.to_dict(), "scale": [0.0]},
        ["not", "a", "dict"],
    ):
        path.write_text(json.dumps(bad))
        with pytest.raises(ConfigError):
            load_model(path)
    path.write_text("{broken")
    with pytest.raises(ConfigError, match="cannot read"):
        load_model(path)
