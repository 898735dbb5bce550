"""Each search stage on its own (docs/design.md#search), then the pipeline through Memory."""

from __future__ import annotations

from datetime import datetime

import pytest

from memdir.index.base import ChunkRow
from memdir.search.decay import apply_temporal_decay, decay_factor, file_date
from memdir.search.fusion import keyword_only_scores, merge_hybrid, merge_rrf
from memdir.search.mmr import mmr_rerank
from memdir.search.placement import make_snippet
from memdir.search.relevance import apply_min_score
from memdir.search.terms import term_weights
from memdir.search.types import Candidate
from memdir.text import query_terms


def cand(
    path: str,
    text: str,
    *,
    score: float = 0.0,
    vector: float = 0.0,
    t: float = 0.0,
    source: str = "memory",
    hit: bool = False,
) -> Candidate:
    c = Candidate(
        ChunkRow(0, "id", path, source, 1, 1, text),
        vector=vector,
        text=t,
        score=score,
        keyword_hit=hit,
    )
    return c


def test_merge_hybrid_weights_and_missing_side() -> None:
    both, vec_only, text_only = (
        cand("a", "x", vector=0.8, t=0.5),
        cand("b", "y", vector=0.6),
        cand("c", "z", t=0.9),
    )
    merge_hybrid([both, vec_only, text_only], 0.7, 0.3)
    assert both.score == pytest.approx(0.7 * 0.8 + 0.3 * 0.5)
    assert vec_only.score == pytest.approx(0.42)
    assert text_only.score == pytest.approx(0.27)


def test_file_date_only_for_daily_logs() -> None:
    assert file_date("memory/2026-11-30.md") is not None
    assert file_date("memory/2026-11-30-standup.md") is None  # session archive: evergreen
    assert file_date("MEMORY.md") is None
    assert file_date("memory/topic/2026-11-30.md") is None


def test_file_date_invalid_calendar_date_is_evergreen() -> None:
    assert file_date("memory/2026-13-40.md") is None


def test_decay_halves_at_half_life() -> None:
    assert decay_factor(30, 30) == pytest.approx(0.5)
    assert decay_factor(60, 30) == pytest.approx(0.25)
    assert decay_factor(0, 30) == 1.0
    assert decay_factor(10, 0) == 1.0


def test_apply_temporal_decay_spares_evergreen_files() -> None:
    now = datetime(2026, 11, 30, 12)
    daily = cand("memory/2026-10-31.md", "x", score=1.0)
    evergreen = cand("MEMORY.md", "x", score=1.0)
    topic = cand("memory/redis.md", "x", score=1.0)
    extra = cand("/abs/CLAUDE.md", "x", score=1.0, source="extra")
    apply_temporal_decay(
        [daily, evergreen, topic, extra],
        now=now,
        half_life_days=30,
        extra_mtimes={"/abs/CLAUDE.md": now.timestamp() - 15 * 86400},
    )
    assert daily.score == pytest.approx(0.5)
    assert daily.age_days == 30
    assert evergreen.score == topic.score == 1.0
    assert extra.score == pytest.approx(2**-0.5, rel=1e-3)


def test_mmr_prefers_diverse_results() -> None:
    a = cand("a", "redis lock port 6379 cluster", score=1.0)
    a_dup = cand("b", "redis lock port 6379 cluster setup", score=0.95)
    other = cand("c", "postgres migration friday rollback", score=0.9)
    tail = cand("d", "unrelated gardening notes", score=0.1)  # sets the min for normalising
    ranked = mmr_rerank([a, a_dup, other, tail], lam=0.7, k=3)
    assert [c.chunk.path for c in ranked] == ["a", "c", "b"]
    assert [c.mmr_rank for c in ranked] == [1, 2, 3]
    # λ = 1 is pure relevance.
    pure = mmr_rerank([a, a_dup, other, tail], lam=1.0, k=3)
    assert [c.chunk.path for c in pure] == ["a", "b", "c"]


def test_mmr_uses_cjk_bigrams() -> None:
    a = cand("a", "数据库迁移计划周五开始", score=1.0)
    dup = cand("b", "数据库迁移计划周五开始执行", score=0.99)
    other = cand("c", "移动端首页加载太慢", score=0.9)
    tail = cand("d", "花园", score=0.1)
    ranked = mmr_rerank([a, dup, other, tail], lam=0.7, k=2)
    assert [c.chunk.path for c in ranked] == ["a", "c"]


def test_min_score_with_keyword_rescue() -> None:
    strong = cand("a", "x", score=0.5)
    weak = cand("b", "y", score=0.2, t=0.6, hit=True)
    kept, rescued = apply_min_score([strong, weak], min_score=0.35)
    assert kept == [strong] and not rescued
    kept, rescued = apply_min_score([weak], min_score=0.35)
    assert kept == [weak] and rescued
    too_weak = cand("c", "z", score=0.1, t=0.2, hit=True)
    assert apply_min_score([too_weak], min_score=0.35) == ([], True)


def test_keyword_only_scores_reward_coverage() -> None:
    full = cand("memory/a.md", "redis lock on port 6380", t=0.5, hit=True)
    partial = cand("memory/b.md", "redis is fast", t=0.6, hit=True)
    keyword_only_scores([full, partial], query_terms("redis lock port"))
    assert full.score > partial.score
    in_path = cand("memory/redis.md", "cache notes", t=0.1, hit=True)
    not_in_path = cand("memory/x.md", "cache notes", t=0.1, hit=True)
    keyword_only_scores([in_path, not_in_path], query_terms("redis cache"))
    assert in_path.score > not_in_path.score


def test_snippet_is_whole_chunk_when_short_and_centred_on_matches_when_long() -> None:
    assert make_snippet("short text", {"x": 1.0}, 700) == "short text"
    lines = [f"filler line {i} " + "zzz " * 20 for i in range(40)]
    lines[30] = "the kubernetes namespace is payments"
    weights = dict.fromkeys(query_terms("kubernetes payments"), 1.0)
    snippet = make_snippet("\n".join(lines), weights, 700)
    assert len(snippet) <= 700
    assert "kubernetes namespace" in snippet


def test_rrf_ranks_by_both_legs_and_normalises_to_one() -> None:
    both = cand("a", "x", vector=0.9, t=0.8, hit=True)
    vec_only = cand("b", "y", vector=0.95)
    text_only = cand("c", "z", t=0.9, hit=True)
    merge_rrf([both, vec_only, text_only], 0.5, 0.5, 60)
    # "a" is 2nd in vectors and 2nd in text; "b" 1st in vectors only; "c" 1st in text only.
    assert both.score == pytest.approx((0.5 / 62 + 0.5 / 62) / (1 / 61))
    assert vec_only.score == pytest.approx((0.5 / 61) / (1 / 61))
    assert both.score > vec_only.score == pytest.approx(text_only.score)
    top = cand("d", "w", vector=1.0, t=1.0, hit=True)
    merge_rrf([top], 0.7, 0.3, 60)
    assert top.score == pytest.approx(1.0)


def test_decay_floor_keeps_a_share_of_the_score() -> None:
    now = datetime(2026, 11, 30, 12)
    old = cand("memory/2025-11-30.md", "x", score=1.0)
    apply_temporal_decay([old], now=now, half_life_days=30, floor=0.8)
    assert 0.8 < old.score < 0.8001


def test_term_weights_favour_rare_terms() -> None:
    texts = ["redis lock port", "redis cache", "redis kafka", "postgres vacuum"]
    weights = term_weights(query_terms("redis kafka"), texts)
    assert weights["kafka"] > weights["redi"] > 0
