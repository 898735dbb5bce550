"""``memdir init --git`` and ``memdir log`` through click's CliRunner."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from memdir.cli import cli


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def fake_config() -> None:
    home = Path(os.environ["MEMDIR_HOME"])
    (home / "config.toml").write_text('[embedding]\nprovider = "fake"\n', encoding="utf-8")


def test_init_git_then_log(runner: CliRunner, tmp_path: Path, fake_config: None) -> None:
    root = tmp_path / "gws"
    result = runner.invoke(cli, ["init", str(root), "--git"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "automatic writes are now commits" in result.output
    assert (root / ".git").is_dir()
    runner.invoke(cli, ["-w", str(root), "remember", "Ana owns CI"], catch_exceptions=False)
    result = runner.invoke(cli, ["-w", str(root), "log", "--json"], catch_exceptions=False)
    data = json.loads(result.output)
    assert data["trail"]["kind"] == "git"
    messages = [r["message"] for r in data["records"]]
    assert messages == ["write: via memdir remember", "init: workspace templates"]
    assert all(len(r["commit"]) == 40 for r in data["records"])
    text = runner.invoke(cli, ["-w", str(root), "log", "--lines", "-n", "1"]).output
    assert "write: via memdir remember" in text and "+3: - Ana owns CI" in text
    assert "    via memdir remember" not in text  # said once, in the message
    status = json.loads(runner.invoke(cli, ["-w", str(root), "status", "--json"]).output)
    assert status["audit"] == {
        "kind": "git",
        "repository": str(root),
        "prefix": "",
        "paused": None,
        "pending": 0,
        "deferred": 0,
    }


def test_log_without_git_and_by_path(runner: CliRunner, tmp_path: Path, fake_config: None) -> None:
    root = tmp_path / "plain"
    runner.invoke(cli, ["init", str(root)], catch_exceptions=False)
    assert "no automatic writes recorded" in runner.invoke(cli, ["-w", str(root), "log"]).output
    runner.invoke(cli, ["-w", str(root), "remember", "Redis runs on 6380"])
    runner.invoke(cli, ["-w", str(root), "remember", "Use uv", "-s", "preferences"])
    data = json.loads(runner.invoke(cli, ["-w", str(root), "log", "MEMORY.md", "--json"]).output)
    assert data["trail"]["kind"] == "log"
    assert [r["files"][0]["path"] for r in data["records"]] == ["MEMORY.md"]
    bad = runner.invoke(cli, ["-w", str(root), "log", "../etc/passwd.md"])
    assert bad.exit_code == 1 and "not allowed" in bad.output


def test_forget_preview_apply_force(
    runner: CliRunner, tmp_path: Path, fake_config: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMDIR_NOW", "2026-12-01T09:00")
    root = tmp_path / "fws"
    runner.invoke(cli, ["init", str(root)], catch_exceptions=False)
    runner.invoke(cli, ["-w", str(root), "remember", "The staging Redis listens on port 6380"])
    daily = root / "memory" / "2026-12-01.md"
    with daily.open("a", encoding="utf-8") as fh:
        fh.write("- my note: redis port 6379 in prod\n")
    preview = runner.invoke(cli, ["-w", str(root), "forget", "redis port"], catch_exceptions=False)
    assert preview.exit_code == 0
    assert "would remove 2 line(s)" in preview.output
    assert "[memdir]" in preview.output and "needs --force" in preview.output
    applied = runner.invoke(cli, ["-w", str(root), "forget", "redis port", "--apply"])
    assert "removed  memory/2026-12-01.md#L3" in applied.output
    assert "add --force" in applied.output and "memdir log --lines" in applied.output
    data = json.loads(
        runner.invoke(
            cli,
            ["-w", str(root), "forget", "memory/2026-12-01.md#L3", "--apply", "--force", "--json"],
        ).output
    )
    assert data["removed"][0]["text"] == "- my note: redis port 6379 in prod"
    assert daily.read_text(encoding="utf-8") == "# 2026-12-01\n\n"
    nothing = runner.invoke(cli, ["-w", str(root), "forget", "zebra giraffe"])
    assert nothing.exit_code == 0 and "nothing matches" in nothing.output


def test_review_text_and_json(
    runner: CliRunner, tmp_path: Path, fake_config: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMDIR_NOW", "2026-12-02T10:00")
    root = tmp_path / "rws"
    runner.invoke(cli, ["init", str(root)], catch_exceptions=False)
    (root / "memory" / "2026-12-01.md").write_text(
        "# 2026-12-01\n\n- Bob owns the deploy pipeline\n- The deploy pipeline is owned by Alice\n",
        encoding="utf-8",
    )
    text = runner.invoke(cli, ["-w", str(root), "review"], catch_exceptions=False).output
    assert "Likely contradictions: 1" in text and "owner bob vs alice" in text
    assert "MEMORY.md budget:" in text and "[bold]" not in text
    data = json.loads(runner.invoke(cli, ["-w", str(root), "review", "--json"]).output)
    assert data["contradictions"][0]["values"] == ["bob", "alice"]
    bad = runner.invoke(cli, ["-w", str(root), "review", "--since", "someday"])
    assert bad.exit_code == 1 and "--since" in bad.output
