"""term_spans: where search terms occur in a snippet (for highlighting)."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from memdir.text import query_terms, term_spans


def _marked(text: str, query: str) -> list[str]:
    return [text[a:b] for a, b in term_spans(text, query_terms(query))]


def test_latin_words_match_by_stem_and_case() -> None:
    text = "Database MIGRATIONS run on Fridays; the migrator is Bob."
    # "migrator" shares the stem "migrat": the keyword index matches it too
    assert _marked(text, "database migration friday") == [
        "Database",
        "MIGRATIONS",
        "Fridays",
        "migrator",
    ]


def test_cjk_terms_match_inside_runs_longest_first() -> None:
    text = "决定使用 Redis 分布式锁，锁的 key 前缀是 lock:order:。端口 6380"
    assert _marked(text, "Redis 分布式锁用哪个端口") == ["Redis", "分布式", "端口"]
    assert _marked("分布式分布式", "分布式") == ["分布式", "分布式"]


def test_no_terms_no_spans() -> None:
    assert term_spans("anything at all", []) == []
    assert _marked("the of and", "the of") == []


@given(st.text(max_size=80), st.lists(st.text(min_size=1, max_size=4), max_size=4))
def test_spans_are_sorted_disjoint_and_inside(text: str, terms: list[str]) -> None:
    spans = term_spans(text, terms)
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end <= start
    assert all(0 <= a < b <= len(text) for a, b in spans)
