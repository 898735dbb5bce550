"""The CLI through click's CliRunner: success paths, JSON shapes, errors and exit codes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from memdir.cli import cli

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def ws(tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> Path:
    # The CLI builds its embedder from config: use the fake one via the user config file.
    home = Path(__import__("os").environ["MEMDIR_HOME"])
    (home / "config.toml").write_text('[embedding]\nprovider = "fake"\n', encoding="utf-8")
    root = tmp_path / "cli-ws"
    result = runner.invoke(cli, ["init", str(root), "--sample"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    monkeypatch.setenv("MEMDIR_WORKSPACE", str(root))
    return root


def test_init_creates_workspace(runner: CliRunner, tmp_path: Path) -> None:
    root = tmp_path / "zh-ws"
    result = runner.invoke(cli, ["init", str(root), "--lang", "zh"], catch_exceptions=False)
    assert result.exit_code == 0
    assert "## 用户偏好" in (root / "MEMORY.md").read_text(encoding="utf-8")
    again = runner.invoke(cli, ["init", str(root)], catch_exceptions=False)
    assert "nothing changed" in again.output


def test_index_then_search_json(runner: CliRunner, ws: Path) -> None:
    result = runner.invoke(cli, ["index"], catch_exceptions=False)
    assert result.exit_code == 0 and "indexed" in result.output
    result = runner.invoke(
        cli, ["search", "Redis 分布式锁", "--json", "-n", "3"], catch_exceptions=False
    )
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert set(data) >= {"results", "mode", "legs", "warnings", "index"}
    assert 1 <= len(data["results"]) <= 3
    first = data["results"][0]
    assert set(first) == {
        "path",
        "start_line",
        "end_line",
        "score",
        "snippet",
        "source",
        "citation",
    }
    assert first["path"] == "memory/2026-11-28.md"


def test_search_explain_text_output(runner: CliRunner, ws: Path) -> None:
    result = runner.invoke(cli, ["search", "helm rollout", "--explain"], catch_exceptions=False)
    assert result.exit_code == 0
    assert "skills/deploy/SKILL.md#L" in result.output
    assert "vector" in result.output and "mmr_rank" in result.output
    data = json.loads(runner.invoke(cli, ["search", "helm rollout", "--json", "--explain"]).output)
    assert "explain" in data["results"][0]


def test_search_several_queries_in_one_call(runner: CliRunner, ws: Path) -> None:
    result = runner.invoke(
        cli,
        ["search", "helm", "rollout", "-q", "Redis 分布式锁", "--json", "--explain"],
        catch_exceptions=False,
    )
    data = json.loads(result.output)
    assert data["queries"] == ["helm rollout", "Redis 分布式锁"]
    found_by = {r["explain"]["query"] for r in data["results"]}
    assert found_by == {"helm rollout", "Redis 分布式锁"}  # each query has reserved places
    paths = {r["path"] for r in data["results"]}
    assert "skills/deploy/SKILL.md" in paths and "memory/2026-11-28.md" in paths
    only_q = runner.invoke(cli, ["search", "-q", "helm rollout", "--json"])
    assert json.loads(only_q.output)["queries"] == ["helm rollout"]


def test_status_json_and_table(runner: CliRunner, ws: Path) -> None:
    runner.invoke(cli, ["index"], catch_exceptions=False)
    data = json.loads(runner.invoke(cli, ["status", "--json"], catch_exceptions=False).output)
    assert data["embedding"]["provider"] == "fake"
    assert data["files"] >= 4 and data["dirty_files"] == 0
    table = runner.invoke(cli, ["status"], catch_exceptions=False).output
    assert "vector backend" in table and "numpy" in table
    assert data["llm"] == {"provider": "none", "model": "", "source": "default"}
    assert "none (default)" in table


def test_status_shows_an_llm_chosen_by_the_environment(
    runner: CliRunner, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMDIR_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    data = json.loads(runner.invoke(cli, ["status", "--json"], catch_exceptions=False).output)
    assert data["llm"]["provider"] == "openai"
    assert data["llm"]["source"].startswith("environment: MEMDIR_LLM_BASE_URL set")
    table = runner.invoke(cli, ["status"], catch_exceptions=False).output
    assert "openai (environment: MEMDIR_LLM_BASE_URL set" in " ".join(table.split())


def test_get_range_and_json(runner: CliRunner, ws: Path) -> None:
    result = runner.invoke(
        cli, ["get", "memory/2026-11-28.md", "--from", "1", "--lines", "1"], catch_exceptions=False
    )
    assert result.output.strip() == "# 2026-11-28"
    data = json.loads(runner.invoke(cli, ["get", "MEMORY.md", "--json"]).output)
    assert data["path"] == "MEMORY.md" and "## Decisions" in data["text"]


def test_get_refused_path_is_one_line_exit_1(runner: CliRunner, ws: Path) -> None:
    result = runner.invoke(cli, ["get", "../secret.md"])
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and "memdir: error:" in result.output


def test_missing_workspace_exit_1(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["-w", str(tmp_path / "none"), "status"])
    assert result.exit_code == 1
    assert "memdir init" in result.output


@pytest.mark.parametrize(
    "args",
    [["status"], ["search", "redis"], ["index"], ["get", "MEMORY.md"], ["remember", "a fact"]],
)
def test_a_folder_that_is_not_a_workspace_is_refused_and_left_alone(
    runner: CliRunner, tmp_path: Path, args: list[str]
) -> None:
    folder = tmp_path / "projects"
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "todo.md").write_text("- buy milk\n", encoding="utf-8")
    before = sorted(p.relative_to(folder) for p in folder.rglob("*"))

    result = runner.invoke(cli, ["-w", str(folder), *args])

    assert result.exit_code == 1
    assert "not a memdir workspace" in result.output and "memdir init" in result.output
    assert sorted(p.relative_to(folder) for p in folder.rglob("*")) == before


def test_init_makes_a_plain_folder_a_workspace(runner: CliRunner, tmp_path: Path) -> None:
    folder = tmp_path / "projects"
    folder.mkdir()
    assert runner.invoke(cli, ["-w", str(folder), "status"]).exit_code == 1
    assert runner.invoke(cli, ["init", str(folder)], catch_exceptions=False).exit_code == 0
    assert runner.invoke(cli, ["-w", str(folder), "status"]).exit_code == 0


def test_usage_errors_exit_2(runner: CliRunner, ws: Path) -> None:
    assert runner.invoke(cli, ["search"]).exit_code == 2
    assert runner.invoke(cli, ["search", "x", "-n", "0"]).exit_code == 2
    assert runner.invoke(cli, ["get", "MEMORY.md", "--from", "0"]).exit_code == 2
    assert runner.invoke(cli, ["nonsense"]).exit_code == 2


def test_bad_config_is_one_clear_line(runner: CliRunner, ws: Path) -> None:
    (ws / ".memdir" / "config.toml").write_text('[embedding]\nbase_url = "http://evil"\n')
    result = runner.invoke(cli, ["status"])
    assert result.exit_code == 1
    assert "may not set embedding.base_url" in result.output


def test_every_command_has_help_and_a_docs_entry(runner: CliRunner) -> None:
    docs = DOCS.read_text(encoding="utf-8")
    paths = _leaf_commands(cli)
    assert {("search",), ("index",), ("status",), ("serve",), ("chat",)} <= set(paths)
    for path in paths:
        command: click.Command | None = cli
        for name in path:
            assert isinstance(command, click.Group)
            command = command.get_command(click.Context(command), name)
        assert command is not None
        name = " ".join(path)
        assert command.help, f"{name} has no help text"
        assert runner.invoke(cli, [*path, "--help"]).exit_code == 0
        assert re.search(rf"^##+ `memdir {name}", docs, re.M), f"docs/cli.md lacks {name}"


def _leaf_commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command that runs (sub-commands of groups included), loading lazy ones."""
    ctx = click.Context(group)
    out = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            out.extend(_leaf_commands(command, (*prefix, name)))
        else:
            out.append((*prefix, name))
    return out


def test_workspace_works_before_and_after_the_command_and_from_the_environment(
    runner: CliRunner, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def workspace_of(args: list[str]) -> str:
        result = runner.invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return str(json.loads(result.output)["workspace"])

    assert workspace_of(["status", "--json"]) == str(ws)  # MEMDIR_WORKSPACE
    monkeypatch.delenv("MEMDIR_WORKSPACE")
    assert workspace_of(["-w", str(ws), "status", "--json"]) == str(ws)
    assert workspace_of(["status", "--workspace", str(ws), "--json"]) == str(ws)
    assert workspace_of(["status", "-w", str(ws), "--json"]) == str(ws)
    # After the command wins over before it (and over the environment).
    monkeypatch.setenv("MEMDIR_WORKSPACE", str(tmp_path / "elsewhere"))
    assert workspace_of(["-w", str(tmp_path / "none"), "status", "-w", str(ws), "--json"]) == str(
        ws
    )
    # `~` is expanded in every form, also when no shell did it (MCP client configurations).
    monkeypatch.setenv("HOME", str(tmp_path))
    assert workspace_of(["status", "--workspace", "~/cli-ws", "--json"]) == str(ws)
    assert workspace_of(["-w", "~/cli-ws", "status", "--json"]) == str(ws)
    monkeypatch.setenv("MEMDIR_WORKSPACE", "~/cli-ws")
    assert workspace_of(["status", "--json"]) == str(ws)


def test_every_command_accepts_workspace_after_it(runner: CliRunner) -> None:
    commands = _leaf_commands(cli)
    assert ("serve",) in commands and len(commands) >= 12
    for path in commands:
        result = runner.invoke(cli, [*path, "--help"])
        assert result.exit_code == 0, path
        assert "-w, --workspace" in result.output, path


def test_init_takes_the_workspace_option_too(runner: CliRunner, tmp_path: Path) -> None:
    root = tmp_path / "after"
    result = runner.invoke(cli, ["init", "--workspace", str(root)], catch_exceptions=False)
    assert result.exit_code == 0 and (root / "MEMORY.md").is_file()
