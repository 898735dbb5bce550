"""``memdir hooks claude-memory``: Claude Code's auto memory as an extra path, with consent."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from memdir import Memory, init_workspace
from memdir.cli.main import cli
from memdir.errors import ConfigError
from memdir.hooks.claude_memory import CLAUDE_PROJECTS, add_extra_path, remove_extra_path
from tests.helpers import write


def test_the_entry_goes_into_index_extra_paths_and_the_rest_is_kept(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '# mine\n[embedding]\nprovider = "fake"\n\n[index]  # notes\n'
        'extra_paths = ["~/code/CLAUDE.md"]\n\n[search]\nmax_results = 4\n'
    )
    assert add_extra_path(config, CLAUDE_PROJECTS)
    assert not add_extra_path(config, CLAUDE_PROJECTS)
    data = tomllib.loads(config.read_text())
    assert data["index"]["extra_paths"] == ["~/code/CLAUDE.md", CLAUDE_PROJECTS]
    assert data["search"]["max_results"] == 4 and config.read_text().startswith("# mine\n")
    assert remove_extra_path(config, CLAUDE_PROJECTS)
    assert tomllib.loads(config.read_text())["index"]["extra_paths"] == ["~/code/CLAUDE.md"]
    fresh = tmp_path / "none" / "config.toml"
    assert add_extra_path(fresh, CLAUDE_PROJECTS)
    assert tomllib.loads(fresh.read_text()) == {"index": {"extra_paths": [CLAUDE_PROJECTS]}}
    table = tmp_path / "table.toml"
    table.write_text('[index]\nurl = ""\n')
    add_extra_path(table, CLAUDE_PROJECTS)
    assert tomllib.loads(table.read_text())["index"]["extra_paths"] == [CLAUDE_PROJECTS]


def test_a_multi_line_array_is_left_to_the_person(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[index]\nextra_paths = [\n  "~/a",\n]\n')
    with pytest.raises(ConfigError, match="by hand"):
        add_extra_path(config, CLAUDE_PROJECTS)
    assert config.read_text() == '[index]\nextra_paths = [\n  "~/a",\n]\n'


def test_one_search_covers_claude_code_s_memory_after_consent(
    tmp_path: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    (isolated_env / "config.toml").write_text('[embedding]\nprovider = "fake"\n')
    claude = home / ".claude" / "projects" / "-home-me-app"
    write(claude, "memory/MEMORY.md", "- The app's CI runs on buildkite-07.\n")
    write(claude, "memory/../transcript.jsonl", '{"type": "user"}\n')
    ws, _ = init_workspace(tmp_path / "notes", "en")
    runner = CliRunner()
    before = runner.invoke(cli, ["hooks", "claude-memory"], catch_exceptions=False)
    assert "1 project folder(s)" in before.output and "not indexed" in before.output
    with Memory(ws) as memory:
        assert not memory.search("buildkite CI").results
    added = runner.invoke(cli, ["hooks", "claude-memory", "--add"], catch_exceptions=False)
    assert added.exit_code == 0 and "indexed by memdir" in added.output
    with Memory(ws) as memory:
        (hit, *_) = memory.search("buildkite CI").results
    assert hit.path.endswith("-home-me-app/memory/MEMORY.md")
    gone = runner.invoke(cli, ["hooks", "claude-memory", "--remove"], catch_exceptions=False)
    assert "not indexed" in gone.output
