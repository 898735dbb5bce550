"""``memdir remember`` and the CLI side of ``memdir serve``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memdir.cli import cli


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def ws(tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = Path(os.environ["MEMDIR_HOME"])
    (home / "config.toml").write_text('[embedding]\nprovider = "fake"\n', encoding="utf-8")
    root = tmp_path / "cli-ws"
    assert runner.invoke(cli, ["init", str(root)], catch_exceptions=False).exit_code == 0
    monkeypatch.setenv("MEMDIR_WORKSPACE", str(root))
    monkeypatch.setenv("MEMDIR_NOW", "2026-11-30T08:00")
    return root


def test_remember_appends_to_the_daily_log(runner: CliRunner, ws: Path) -> None:
    result = runner.invoke(cli, ["remember", "Standup moved to 9:30"], catch_exceptions=False)
    assert result.exit_code == 0
    assert result.output.strip() == "remembered in memory/2026-11-30.md#L3"
    text = (ws / "memory" / "2026-11-30.md").read_text(encoding="utf-8")
    assert text == "# 2026-11-30\n\n- Standup moved to 9:30\n"


def test_remember_skips_a_duplicate_and_says_so(runner: CliRunner, ws: Path) -> None:
    runner.invoke(cli, ["remember", "Standup moved to 9:30"], catch_exceptions=False)
    again = runner.invoke(cli, ["remember", "standup moved to 9:30!"], catch_exceptions=False)
    assert again.exit_code == 0
    assert "skipped" in again.output and "line 3" in again.output
    data = json.loads(runner.invoke(cli, ["remember", "Standup moved to 9:30", "--json"]).output)
    assert data["written"] is False and data["path"] == "memory/2026-11-30.md"


def test_remember_into_a_memory_md_section(runner: CliRunner, ws: Path) -> None:
    result = runner.invoke(
        cli, ["remember", "Never deploy on Fridays", "--section", "lessons"], catch_exceptions=False
    )
    assert result.exit_code == 0 and result.output.startswith("remembered in MEMORY.md#L")
    assert "## Lessons\n- Never deploy on Fridays\n" in (ws / "MEMORY.md").read_text()
    found = runner.invoke(cli, ["search", "deploy fridays", "--json"], catch_exceptions=False)
    assert json.loads(found.output)["results"][0]["path"] == "MEMORY.md"


def test_remember_usage_and_input_errors(runner: CliRunner, ws: Path) -> None:
    bad_section = runner.invoke(cli, ["remember", "x", "--section", "gossip"])
    assert bad_section.exit_code == 2 and "gossip" in bad_section.output
    both = runner.invoke(cli, ["remember", "x", "--section", "todos", "--daily"])
    assert both.exit_code == 2
    assert runner.invoke(cli, ["remember"]).exit_code == 2
    empty = runner.invoke(cli, ["remember", "   "])
    assert empty.exit_code == 1 and "memdir: error:" in empty.output and "empty" in empty.output
    long = runner.invoke(cli, ["remember", "y" * 2001])
    assert long.exit_code == 1 and "limit is 2000" in long.output
    assert not (ws / "memory" / "2026-11-30.md").exists()


def test_serve_without_the_mcp_sdk_says_how_to_install_it(
    runner: CliRunner, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mcp.server.lowlevel", None)  # import fails
    result = runner.invoke(cli, ["serve"])
    assert result.exit_code == 1
    assert "pip install 'mcp>=2.0,<3'" in result.output
