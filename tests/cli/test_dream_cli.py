"""``memdir dream`` through click's CliRunner: preview, --apply, --explain, --schedule."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from memdir.cli import cli

QUERIES = ["Redis 分布式锁", "订单服务 并发 Redis 锁", "redis lock key prefix"]


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def recalled(tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The sample workspace after three queries a day for five days."""
    home = Path(os.environ["MEMDIR_HOME"])
    (home / "config.toml").write_text('[embedding]\nprovider = "fake"\n', encoding="utf-8")
    root = tmp_path / "cli-ws"
    assert runner.invoke(cli, ["init", str(root), "--sample"]).exit_code == 0
    monkeypatch.setenv("MEMDIR_WORKSPACE", str(root))
    for day in range(26, 31):
        monkeypatch.setenv("MEMDIR_NOW", f"2026-11-{day}T09:00")
        for query in QUERIES:
            result = runner.invoke(cli, ["search", query, "--json"], catch_exceptions=False)
            assert result.exit_code == 0
    monkeypatch.setenv("MEMDIR_NOW", "2026-11-30T21:00")
    return root


def _keys(output: str) -> list[str]:
    return re.findall(r"^  ([0-9a-f]{12})  ", output, re.M)


def test_preview_lists_candidates_and_writes_nothing(runner: CliRunner, recalled: Path) -> None:
    before = (recalled / "MEMORY.md").read_bytes()
    result = runner.invoke(cli, ["dream"], catch_exceptions=False)
    assert result.exit_code == 0
    out = result.output
    assert out.startswith("dream preview 2026-11-30 21:00 · manual gates: score ≥ 0.75")
    assert "REM: redis" in out
    assert "memory/2026-11-28.md#L1-L6  promote" in out
    assert "      + 讨论了订单服务的并发问题，决定使用 Redis 分布式锁" in out
    assert "would promote 2 entries (2 lines)" in out and "preview only, nothing written" in out
    assert _keys(out)
    assert (recalled / "MEMORY.md").read_bytes() == before


def test_apply_writes_markers_then_nothing_new(runner: CliRunner, recalled: Path) -> None:
    result = runner.invoke(cli, ["dream", "--apply"], catch_exceptions=False)
    assert result.exit_code == 0 and "promoted 2 entries (2 lines)" in result.output
    text = (recalled / "MEMORY.md").read_text(encoding="utf-8")
    assert "## Promoted 2026-11-30\n<!-- memdir:dream:begin 2026-11-30 -->\n- " in text
    assert "\n- 讨论了订单服务的并发问题" in text and "\n- Decided to keep session tokens" in text
    assert re.search(r"<!-- memdir:promoted memory/2026-11-28\.md#L3-L3 key=[0-9a-f]{12} -->", text)
    again = runner.invoke(cli, ["dream", "--apply"], catch_exceptions=False)
    assert "promoted 0 entries (0 lines)" in again.output
    assert (recalled / "MEMORY.md").read_text(encoding="utf-8") == text


def test_explain_shows_every_factor(runner: CliRunner, recalled: Path) -> None:
    key = _keys(runner.invoke(cli, ["dream"], catch_exceptions=False).output)[0]
    result = runner.invoke(cli, ["dream", "--explain", key[:6]], catch_exceptions=False)
    assert result.exit_code == 0
    out = result.output
    assert re.match(rf"{key}  memory/2026-11-2[78]\.md#L1-L6\n", out)
    for name in ("frequency", "relevance", "diversity", "recency", "consolidation", "conceptual"):
        assert re.search(rf"^{name}\s+\d\.\d{{3}}\s+0\.\d\d\s+\d\.\d{{3}}  ", out, re.M), name
    assert re.search(r"^light_boost .*≤0\.06", out, re.M)
    assert re.search(r"^rem_boost .*≤0\.09 .*strongest theme redis", out, re.M)
    assert "passes: promoted by `memdir dream --apply`" in out
    data = json.loads(runner.invoke(cli, ["dream", "--explain", key, "--json"]).output)
    assert data["key"] == key and data["factors"]["frequency"]["weight"] == 0.24


def test_schedule_prints_only_the_summary(runner: CliRunner, recalled: Path) -> None:
    result = runner.invoke(cli, ["dream", "--schedule"], catch_exceptions=False)
    assert result.exit_code == 0
    assert result.output.count("\n") == 1
    assert result.output.startswith("dream 2026-11-30 (schedule gates): promoted ")


def test_json_report(runner: CliRunner, recalled: Path) -> None:
    data = json.loads(runner.invoke(cli, ["dream", "--json"], catch_exceptions=False).output)
    assert data["applied"] is False and data["gates"] == "manual"
    assert data["budget"] == 10_000 and data["over_budget"] is False
    assert {"key", "score", "factors", "status"} <= set(data["candidates"][0])


def test_errors(runner: CliRunner, recalled: Path) -> None:
    unknown = runner.invoke(cli, ["dream", "--explain", "ffffffffffff"])
    assert unknown.exit_code == 1
    assert "memdir: error: no recall entry with key 'ffffffffffff'" in unknown.output
    both = runner.invoke(cli, ["dream", "--explain", "abc", "--apply"])
    assert both.exit_code == 2 and "--explain only reads" in both.output


def test_empty_store_preview(runner: CliRunner, tmp_path: Path) -> None:
    root = tmp_path / "empty"
    assert runner.invoke(cli, ["init", str(root)]).exit_code == 0
    (Path(os.environ["MEMDIR_HOME"]) / "config.toml").write_text(
        '[embedding]\nprovider = "none"\n', encoding="utf-8"
    )
    result = runner.invoke(cli, ["-w", str(root), "dream"], catch_exceptions=False)
    assert result.exit_code == 0 and "nothing recalled from the daily logs yet" in result.output
