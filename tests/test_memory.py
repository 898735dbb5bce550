"""The Memory facade end to end: search (en, zh, mixed), freshness, memory_get, bad input."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from memdir import FakeEmbedder, Memory, PathNotAllowed, QueryError, WorkspaceError
from memdir.config.settings import load_config
from tests.helpers import write

NOTES = {
    "memory/2026-11-27.md": (
        "# 2026-11-27\n- Decided to keep session tokens in Redis; the cache listens on port 6380.\n"
        "- Bob prefers code reviews in the morning.\n"
    ),
    "memory/2026-11-28.md": (
        "# 2026-11-28\n- 决定使用 Redis 分布式锁，锁的 key 前缀是 lock:order:。\n"
        "- 数据库迁移计划：周五晚上开始。\n- 缓存命中率只有 62%，端口改为 6380。\n"
    ),
    "memory/projects.md": "# Projects\n- billing-service deploys with Helm to payments.\n",
    "skills/deploy/SKILL.md": "# Deploy\nhelm upgrade --install then kubectl rollout status\n",
}


@pytest.fixture
def filled(memory: Memory, workspace: Path) -> Memory:
    for rel, text in NOTES.items():
        write(workspace, rel, text)
    return memory


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("which port does the redis cache use", "memory/2026-11-27.md"),
        ("缓存", "memory/2026-11-28.md"),
        ("迁移", "memory/2026-11-28.md"),
        ("端口", "memory/2026-11-28.md"),
        ("Redis 分布式锁", "memory/2026-11-28.md"),
        ("helm rollout", "skills/deploy/SKILL.md"),
    ],
)
def test_search_finds_the_right_file(filled: Memory, query: str, expected: str) -> None:
    response = filled.search(query)
    assert response.results, response.warnings
    assert response.results[0].path == expected
    hit = response.results[0]
    # a window of a daily log cites the lines that answer, inside what it shows
    first, last = map(
        int, re.fullmatch(rf"{re.escape(hit.path)}#L(\d+)-L(\d+)", hit.citation).groups()
    )  # type: ignore[union-attr]
    assert 1 <= hit.start_line <= first <= last <= hit.end_line
    assert hit.snippet and len(hit.snippet) <= 700


def test_keyword_only_mode_ranks_without_embedder(workspace: Path) -> None:
    for rel, text in NOTES.items():
        write(workspace, rel, text)
    config = load_config(workspace, {"embedding": {"provider": "none"}})
    with Memory(workspace, config=config) as mem:
        assert mem.embedder is None
        response = mem.search("Redis 分布式锁")
        assert response.mode == "keyword"
        assert response.results[0].path == "memory/2026-11-28.md"
        assert mem.status()["mode"] == "keyword-only"


def test_search_is_never_stale(filled: Memory, workspace: Path) -> None:
    assert not filled.search("zeppelin").results
    write(workspace, "memory/2026-11-29.md", "- booked the zeppelin tour\n")
    assert filled.search("zeppelin").results[0].path == "memory/2026-11-29.md"
    (workspace / "memory" / "2026-11-29.md").unlink()
    assert not filled.search("zeppelin").results


def test_results_carry_explain_parts(filled: Memory) -> None:
    hit = filled.search("redis port").results[0]
    assert set(hit.explain) >= {"vector", "text", "decay", "mmr_rank"}
    data = filled.search("redis port").to_dict(explain=True)
    assert set(data["results"][0]) >= {
        "path",
        "start_line",
        "end_line",
        "score",
        "snippet",
        "source",
        "citation",
        "explain",
    }


def test_temporal_decay_uses_memdir_now(
    filled: Memory, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMDIR_NOW", "2026-12-27T09:00")
    config = load_config(workspace, {"search": {"decay": True}})
    with Memory(workspace, config=config, embedder=FakeEmbedder()) as mem:
        results = mem.search("Bob code reviews morning").results
    hit = next(h for h in results if h.path == "memory/2026-11-27.md")
    assert hit.explain["age_days"] == 30
    assert hit.explain["decay"] == pytest.approx(0.5)
    # Off by default: no decay applied.
    default_hit = next(
        h
        for h in filled.search("Bob code reviews morning").results
        if h.path == "memory/2026-11-27.md"
    )
    assert default_hit.explain["decay"] == 1.0


@pytest.mark.parametrize("query", ['"', "*", "NEAR(", "AND", "-", 'redis" OR "x', "a:b", "^"])
def test_fts_hostile_queries_do_not_fail(filled: Memory, query: str) -> None:
    response = filled.search(query)
    assert isinstance(response.results, list)


def test_empty_and_stopword_queries(filled: Memory) -> None:
    assert filled.search("").results == []
    assert "empty query" in filled.search("   ").warnings
    only_stop = filled.search("the of and 的 了")
    assert any("stopwords" in w for w in only_stop.warnings)


def test_oversized_query_and_bad_limits(filled: Memory) -> None:
    with pytest.raises(QueryError):
        filled.search("x" * 5000)
    with pytest.raises(QueryError):
        filled.search("redis", max_results=0)


def test_provider_failing_at_query_time_falls_back_to_keywords(workspace: Path) -> None:
    for rel, text in NOTES.items():
        write(workspace, rel, text)
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        mem.sync()
    broken = FakeEmbedder(fail_with="timed out after 30 s")
    with Memory(workspace, embedder=broken) as mem:
        response = mem.search("Redis 分布式锁")
        assert response.mode == "keyword"
        assert any("timed out" in w for w in response.warnings)
        assert response.results[0].path == "memory/2026-11-28.md"


def test_wrong_dimension_from_provider_is_reported(workspace: Path) -> None:
    class WrongDims(FakeEmbedder):
        def embed_documents(self, texts):  # type: ignore[no-untyped-def]
            return super().embed_documents(texts)[:, :10]

    _filler(workspace)
    write(workspace, "memory/a.md", "dimension mismatch words\n")
    with Memory(workspace, embedder=WrongDims()) as mem:
        report = mem.sync()
        assert any("shape" in w for w in report.warnings)
        assert mem.search("dimension mismatch").results[0].path == "memory/a.md"


def _filler(workspace: Path, n: int = 12) -> None:
    """Unrelated notes, so BM25 has a realistic corpus (its IDF collapses with 2 documents)."""
    topics = ["gardening tomatoes", "sourdough starter", "marathon training", "tax forms"]
    for i in range(n):
        write(workspace, f"memory/topic-{i}.md", f"- notes on {topics[i % len(topics)]} {i}\n")


def test_shared_scope_hides_memory_md(workspace: Path) -> None:
    _filler(workspace)
    write(workspace, "MEMORY.md", "# Memory\n- private passphrase is bluebird\n")
    write(workspace, "memory/2026-11-28.md", "- bluebird sighting at the lake\n")
    with Memory(workspace, embedder=FakeEmbedder(), scope="shared") as mem:
        paths = [h.path for h in mem.search("bluebird passphrase").results]
        assert "MEMORY.md" not in paths and "memory/2026-11-28.md" in paths
        with pytest.raises(PathNotAllowed):
            mem.get("MEMORY.md")


# -- memory_get ------------------------------------------------------------------------


def test_get_whole_file_and_line_range(filled: Memory) -> None:
    whole = filled.get("memory/2026-11-28.md")
    assert whole.text == NOTES["memory/2026-11-28.md"]
    part = filled.get("memory/2026-11-28.md", from_line=2, lines=2)
    assert part.text.splitlines() == NOTES["memory/2026-11-28.md"].splitlines()[1:3]
    assert part.from_line == 2 and part.lines == 2 and part.total_lines == 4
    past_end = filled.get("memory/2026-11-28.md", from_line=50, lines=5)
    assert past_end.text == "" and past_end.exists


def test_get_missing_file_is_empty(filled: Memory) -> None:
    result = filled.get("memory/2030-01-01.md")
    assert result.text == "" and not result.exists


@pytest.mark.parametrize(
    "path",
    [
        "../etc/passwd.md",
        "memory/../../x.md",
        "/etc/passwd",
        "USER.md",
        "AGENTS.md",
        "memory/notes.txt",
        "",
        "memory",
    ],
)
def test_get_refuses_paths_outside_memory(filled: Memory, path: str) -> None:
    with pytest.raises(PathNotAllowed):
        filled.get(path)


def test_get_refuses_symlinks(filled: Memory, workspace: Path, tmp_path: Path) -> None:
    secret = write(tmp_path, "secret.md", "top secret\n")
    os.symlink(secret, workspace / "memory" / "link.md")
    with pytest.raises(PathNotAllowed, match="symlink"):
        filled.get("memory/link.md")


def test_get_bad_line_arguments(filled: Memory) -> None:
    with pytest.raises(QueryError):
        filled.get("MEMORY.md", from_line=0)
    with pytest.raises(QueryError):
        filled.get("MEMORY.md", lines=0)


def test_extra_paths_are_indexed_and_readable(workspace: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    claude = write(project, "CLAUDE.md", "# Project rules\n- use uv for installs\n")
    config = load_config(workspace, {"index": {"extra_paths": [str(claude)]}})
    with Memory(workspace, config=config, embedder=FakeEmbedder()) as mem:
        hit = mem.search("uv installs").results[0]
        assert hit.path == str(claude) and hit.source == "extra"
        assert "use uv" in mem.get(str(claude)).text


def test_missing_workspace_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="memdir init"):
        Memory(tmp_path / "nope", embedder=FakeEmbedder())


def test_status_reports_dirty_files(memory: Memory, workspace: Path) -> None:
    memory.sync()
    write(workspace, "memory/new.md", "fresh\n")
    status = memory.status()
    assert status["dirty_files"] == 1
    assert status["embedding"]["provider"] == "fake"


def test_openclaw_faithful_keyword_mode_misses_chinese_words(workspace: Path) -> None:
    """The benchmark switch: raw unicode61 tokens AND-ed cannot find a Chinese word inside a
    sentence, which memdir's segmented OR-query does (docs/design.md#keyword-search)."""
    for rel, text in NOTES.items():
        write(workspace, rel, text)
    faithful = load_config(
        workspace,
        {
            "embedding": {"provider": "none"},
            "index": {"keyword_tokenizer": "plain"},
            "search": {"keyword_query": "and"},
        },
    )
    with Memory(workspace, config=faithful) as mem:
        assert mem.search("迁移").results == []  # inside the run 数据库迁移计划
        assert mem.search("Redis cache port").results  # plain English words still match
    default = load_config(workspace, {"embedding": {"provider": "none"}})
    with Memory(workspace, config=default) as mem:
        assert mem.search("迁移").results[0].path == "memory/2026-11-28.md"


def test_unknown_keyword_modes_are_config_errors_at_load(workspace: Path) -> None:
    from memdir import ConfigError

    path = write(workspace, ".memdir/config.toml", '[search]\nkeyword_query = "xor"\n')
    with pytest.raises(ConfigError) as info:
        load_config(workspace)
    assert str(info.value) == f"{path}: search.keyword_query = 'xor' is not one of: or, and"
    with pytest.raises(ConfigError, match=r"^arguments: index.keyword_tokenizer = 'jieba'"):
        load_config(workspace.parent, {"index": {"keyword_tokenizer": "jieba"}})
