"""The recall store: what each search records, its caps, and that it never breaks a search."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from memdir import FakeEmbedder, Memory
from memdir.dreaming.store import (
    MAX_DAYS,
    MAX_QUERY_HASHES,
    MAX_TAGS,
    SCHEMA_VERSION,
    RecallHit,
    RecallStore,
    concept_tags,
    mentioned_terms,
    query_hash,
)
from memdir.search.relevance import CALIBRATIONS, Calibration, register_calibration
from tests.helpers import write

NOW = datetime(2026, 11, 30, 9, 0)


@pytest.fixture
def notes(workspace: Path) -> Path:
    write(
        workspace,
        "memory/2026-11-28.md",
        "# 2026-11-28\n\n- 订单服务决定使用 Redis 分布式锁，key 前缀是 lock:order:。\n"
        "- The flaky CI job was caused by a shared temp dir.\n",
    )
    write(workspace, "memory/redis.md", "# Redis\n\nRedis 分布式锁 runbook: SET NX PX.\n")
    (workspace / "MEMORY.md").write_text(
        "# Memory\n\n## Decisions\n- Redis 分布式锁 everywhere.\n", encoding="utf-8"
    )
    return workspace


def test_search_records_daily_log_results_only(
    notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMDIR_NOW", "2026-11-30T09:00")
    with Memory(notes, embedder=FakeEmbedder()) as mem:
        first = mem.search("Redis 分布式锁", min_score=0.0)
        mem.search("redis  分布式锁", min_score=0.0)  # the same query, case and spacing aside
        mem.search("订单服务 Redis", min_score=0.0)
        entries = mem.recalls.entries()
    paths = {hit.path for hit in first.results}
    assert {"MEMORY.md", "memory/redis.md", "memory/2026-11-28.md"} <= paths
    assert [e.path for e in entries] == ["memory/2026-11-28.md"]
    (entry,) = entries
    assert entry.recall_count == 3
    assert entry.unique_queries == 2
    assert entry.days == ("2026-11-30",)
    assert entry.max_score >= entry.total_score / 3 > 0
    assert entry.snippet.startswith("# 2026-11-28")
    assert {"redis", "分布式", "订单"} <= set(entry.tags)
    assert entry.first_recalled == entry.last_recalled == NOW
    assert entry.promoted_at is None
    assert (notes / ".memdir" / "recall.sqlite").is_file()


def test_shared_scope_records_too(notes: Path) -> None:
    with Memory(notes, embedder=FakeEmbedder(), scope="shared") as mem:
        mem.search("flaky CI temp dir")
        assert [e.path for e in mem.recalls.entries()] == ["memory/2026-11-28.md"]


def test_lists_keep_the_most_recent_and_are_capped(tmp_path: Path) -> None:
    store = RecallStore(tmp_path / "recall.sqlite")
    tags = tuple(f"tag{i}" for i in range(12))
    hit = RecallHit("memory/2026-11-01.md", 1, 4, "- text", 0.5, tags)
    for day in range(20):
        when = datetime(2026, 11, 1, 9) + timedelta(days=day)
        store.record([hit], query=f"query number {day}", now=when)
        store.record([hit], query=f"another query {day}", now=when + timedelta(hours=1))
    (entry,) = store.entries()
    assert entry.recall_count == 40
    assert entry.total_score == pytest.approx(20.0) and entry.max_score == 0.5
    assert len(entry.query_hashes) == MAX_QUERY_HASHES
    assert entry.query_hashes[0] == query_hash("another query 19")
    assert len(entry.days) == MAX_DAYS and entry.days[0] == "2026-11-20"
    assert entry.tags == tags[:MAX_TAGS]
    assert entry.first_recalled == datetime(2026, 11, 1, 9)
    assert entry.last_recalled == datetime(2026, 11, 20, 10)
    store.close()


def test_entries_are_keyed_by_lines_and_snippet_hash(tmp_path: Path) -> None:
    store = RecallStore(tmp_path / "recall.sqlite")
    hits = [
        RecallHit("memory/2026-11-01.md", 1, 4, "- text", 0.5, ()),
        RecallHit("memory/2026-11-01.md", 2, 5, "- text", 0.5, ()),  # moved: other lines
        RecallHit("memory/2026-11-01.md", 1, 4, "- text, edited", 0.5, ()),
    ]
    assert store.record(hits, query="q", now=NOW) == 3
    assert len({e.key for e in store.entries()}) == 3
    store.mark_promoted([store.entries()[0].key], when=NOW)
    assert sum(e.promoted_at is not None for e in store.entries()) == 1
    assert store.prune(before=NOW + timedelta(seconds=1)) == 3
    store.close()


def test_schema_is_migrated_and_wal(tmp_path: Path) -> None:
    store = RecallStore(tmp_path / "recall.sqlite")
    assert store.entries() == []
    store.close()
    conn = sqlite3.connect(tmp_path / "recall.sqlite")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_concept_tags_are_chinese_aware_and_keep_the_query_spelling() -> None:
    snippet = "- 数据库迁移计划：周五晚上开始，migrations run from ops/rollback.sql on port 5432"
    tags = concept_tags(
        snippet, "数据库 migrations 的 port 5432", ["数据库", "migrat", "port", "5432"]
    )
    assert tags == ("数据库", "migrations", "port")  # numbers are not concepts
    assert concept_tags(snippet, "redis", ["redi"]) == ()


def test_mentioned_terms_match_words_not_fragments() -> None:
    text = "The deploy was blocked; 分布式锁 in node.js services, see v2.1 notes"
    terms = ["lock", "block", "分布式", "锁", "node.js", "js", "servic", "v2.1", "deploy"]
    assert mentioned_terms(text, terms) == [
        "block",
        "分布式",
        "锁",
        "node.js",
        "js",
        "servic",
        "v2.1",
        "deploy",
    ]


def test_a_broken_store_warns_and_never_fails_the_search(notes: Path) -> None:
    (notes / ".memdir").mkdir(exist_ok=True)
    (notes / ".memdir" / "recall.sqlite").mkdir()  # cannot be opened as a database
    with Memory(notes, embedder=FakeEmbedder()) as mem:
        response = mem.search("flaky CI temp dir")
    assert response.results
    assert any("recall tracking failed" in w for w in response.warnings)


def test_an_unreadable_store_is_moved_aside(notes: Path) -> None:
    (notes / ".memdir").mkdir(exist_ok=True)
    (notes / ".memdir" / "recall.sqlite").write_bytes(b"this is not a database" * 100)
    with Memory(notes, embedder=FakeEmbedder()) as mem:
        response = mem.search("flaky CI temp dir")
        assert len(mem.recalls.entries()) == 1
    assert any("recall store was unreadable" in w for w in response.warnings)
    assert list((notes / ".memdir").glob("recall.sqlite.corrupt-*"))


def test_with_calibrated_scores_dreaming_averages_the_hybrid_score(
    notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dreaming's gates were set on hybrid scores: a calibrated relevance (an honest, often
    low probability) would keep nearly every note below them."""
    embedder = FakeEmbedder()
    calibration = Calibration(weights={"vector": 1.0}, bias=-6.0, source="test")
    register_calibration(embedder.provider, embedder.model_id, calibration)
    monkeypatch.setenv("MEMDIR_NOW", "2026-11-30T09:00")
    try:
        with Memory(notes, embedder=embedder) as mem:
            response = mem.search("Redis 分布式锁", min_score=0.0)
            (entry,) = mem.recalls.entries()
    finally:
        del CALIBRATIONS[(embedder.provider, embedder.model_id)]
    [hit] = [r for r in response.results if r.path == "memory/2026-11-28.md"]
    assert response.calibrated and hit.score < 0.05 < hit.explain["fused"]
    assert entry.max_score == pytest.approx(hit.explain["fused"], abs=1e-4)
