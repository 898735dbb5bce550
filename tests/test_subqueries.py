"""Splitting questions about two things, and merging rankings with reserved slots."""

from __future__ import annotations

import pytest

from memdir.search.subqueries import merge_rankings, split_query


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        (
            "What do Jon and Gina both have in common?",
            ["What do Jon have in common?", "What do Gina have in common?"],
        ),
        (
            "Which city have both Jean and John visited?",
            ["Which city have Jean visited?", "Which city have John visited?"],
        ),
        ("How many times has Melanie gone to the beach?", ["Melanie gone to the beach?"]),
        ("张三和李四分别住在哪里", ["张三住在哪里", "李四住在哪里"]),
        ("数据库和缓存的端口是多少", ["数据库的端口是多少", "缓存的端口是多少"]),
        ("What did Caroline research?", []),
        ("which port and host does redis use", []),  # lower-case words: not split
        ("Did Jon and Jon meet?", []),
        ("   ", []),
        ("how often", []),
    ],
)
def test_split_query(question: str, parts: list[str]) -> None:
    assert split_query(question) == parts


def test_merge_reserves_slots_then_fills_from_the_first_ranking() -> None:
    main = ["a", "b", "c", "d", "e"]
    one = ["x", "a", "y"]
    two = ["z", "w"]
    merged = merge_rankings([main, one, two], slots=2, ident=str)
    assert merged[:6] == ["a", "x", "z", "b", "y", "w"]  # turns; "a" not taken twice
    assert merged[6:] == ["c", "d", "e"]
    assert merge_rankings([main], slots=2, ident=str) == main
    assert merge_rankings([[], one], slots=1, ident=str) == ["x", "a", "y"]
