"""The storage interface's own types."""

from __future__ import annotations

import pytest

from memdir.index.base import KEYWORD_MODES, KeywordQuery


def test_build_keeps_distinct_non_blank_terms_in_order() -> None:
    query = KeywordQuery.build(["redis", "  ", "port", "redis", "分布式"])
    assert query == KeywordQuery(("redis", "port", "分布式"), "or")


def test_nothing_to_search_is_none() -> None:
    assert KeywordQuery.build([]) is None
    assert KeywordQuery.build(["  ", "\t"]) is None


@pytest.mark.parametrize("mode", KEYWORD_MODES)
def test_each_mode_is_accepted(mode: str) -> None:
    assert KeywordQuery(("a",), mode).mode == mode


def test_a_bad_mode_or_no_term_is_refused() -> None:
    with pytest.raises(ValueError, match="keyword mode"):
        KeywordQuery(("a",), "near")
    with pytest.raises(ValueError, match="at least one term"):
        KeywordQuery(())


def test_weights_follow_the_kept_terms_and_default_to_one() -> None:
    query = KeywordQuery.build(["redis", "port", "redis"], weights={"port": 2.5})
    assert query == KeywordQuery(("redis", "port"), "or", (1.0, 2.5))
    assert query.weighted({"redis": 0.4, "port": 1.2}) == {"redis": 0.4, "port": 3.0}
    plain = KeywordQuery.build(["redis", "port"])
    assert plain is not None and plain.weights == ()
    assert plain.weighted({"redis": 0.4, "port": 1.2}) == {"redis": 0.4, "port": 1.2}


@pytest.mark.parametrize("weights", [(1.0,), (1.0, 0.0), (1.0, -2.0), (1.0, float("nan"))])
def test_bad_weights_are_refused(weights: tuple[float, ...]) -> None:
    with pytest.raises(ValueError, match="weight"):
        KeywordQuery(("a", "b"), "or", weights)
