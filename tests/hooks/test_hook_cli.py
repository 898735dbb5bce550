"""The hook commands end to end, the way Claude Code runs them.

``memdir hooks install`` writes the settings; each installed command string then runs in a
shell with Claude Code's JSON on stdin, in a fresh process, against a real OpenAI-compatible
server on 127.0.0.1 for the memory flush and the archive slug.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from memdir import init_workspace
from memdir.cli import cli
from tests.helpers import write
from tests.hooks.conftest import HookInput, write_llm_config
from tests.http_server import PROVIDER_ENV, run_server
from tests.llm.conftest import ChatServer, openai_reply

TODAY = "2026-12-02"


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with run_server(ChatServer()) as app:
        yield app


@pytest.fixture
def ws(tmp_path: Path, isolated_env: Path, server: ChatServer) -> Path:
    write_llm_config(isolated_env, server.url)
    root, _ = init_workspace(tmp_path / "notes", "en")
    write(root, "MEMORY.md", "# Memory\n\n## Project facts\n- Staging listens on port 5433.\n")
    return root


def hook_env(isolated_env: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_ENV}
    env.update(
        MEMDIR_HOME=str(isolated_env),
        MEMDIR_NOW=f"{TODAY}T10:00:00",
        MEMDIR_TEST_LLM_KEY="sk-test",
    )
    return env


def test_install_then_run_each_installed_command_as_claude_code_does(
    ws: Path, tmp_path: Path, isolated_env: Path, server: ChatServer, hook_input: HookInput
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = hook_env(isolated_env)
    install = [sys.executable, "-m", "memdir", "hooks", "install", "claude-code", "-w", str(ws)]
    done = subprocess.run(install, cwd=project, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    commands = {e: g[0]["hooks"][0]["command"] for e, g in settings["hooks"].items()}
    assert set(commands) == {"SessionStart", "UserPromptSubmit", "PreCompact", "SessionEnd"}
    server.enqueue(200, openai_reply("- Deploys happen on Fridays."))
    server.enqueue(200, openai_reply("staging-port"))

    def run(event: str, **fields: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["bash", "-c", commands[event]],
            input=hook_input(event, **fields),
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done

    start = json.loads(run("SessionStart").stdout)
    assert "Staging listens on port 5433." in start["hookSpecificOutput"]["additionalContext"]
    prompt = run("UserPromptSubmit", prompt="which port does staging listen on")
    recalled = json.loads(prompt.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "MEMORY.md#L" in recalled and "5433" in recalled
    flushed = run("PreCompact")
    assert json.loads(flushed.stdout) == {
        "systemMessage": f"memdir: memory flush saved 1 line(s) to memory/{TODAY}.md"
    }
    assert "- Deploys happen on Fridays." in (ws / "memory" / f"{TODAY}.md").read_text()
    flush_request = server.requests[0].json
    assert "Please check the port for staging" in json.dumps(flush_request)
    ended = run("SessionEnd", reason="prompt_input_exit")
    assert ended.stdout == "" and "archived 7 messages" in ended.stderr
    assert (ws / "memory" / f"{TODAY}-staging-port.md").is_file()
    assert len(server.requests) == 2


def test_a_hook_exits_0_and_says_why_on_stderr(tmp_path: Path, isolated_env: Path) -> None:
    env = hook_env(isolated_env)
    argv = [sys.executable, "-m", "memdir", "hook", "session-start", "-w", str(tmp_path / "no")]
    done = subprocess.run(argv, input="{broken", env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == ""
    assert done.stderr.startswith("memdir hook session-start: the hook input is not JSON")


def test_cli_install_and_uninstall(ws: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    settings = tmp_path / "custom" / "settings.json"
    args = ["hooks", "install", "claude-code", "--settings", str(settings), "-w", str(ws)]
    first = runner.invoke(cli, args, catch_exceptions=False)
    assert first.exit_code == 0 and first.output.startswith(f"updated {settings}")
    assert "PreCompact: memdir hook pre-compact" in first.output
    again = runner.invoke(cli, args, catch_exceptions=False)
    assert again.output.startswith("already up to date:")
    gone = runner.invoke(
        cli,
        ["hooks", "uninstall", "claude-code", "--settings", str(settings)],
        catch_exceptions=False,
    )
    assert gone.exit_code == 0 and "removed 4 memdir hook(s)" in gone.output
    assert json.loads(settings.read_text()) == {}
    bad = runner.invoke(cli, ["hooks", "install", "claude-code", "-w", str(tmp_path / "nope")])
    assert bad.exit_code == 1 and "memdir init" in bad.output
    assert runner.invoke(cli, ["hooks", "install", "cursor"]).exit_code == 2


def test_a_detached_hook_answers_at_once_and_archives_after(
    ws: Path, isolated_env: Path, server: ChatServer, hook_input: HookInput
) -> None:
    """``--detach`` (the plugin's SessionEnd, which Claude Code cancels after 1.5 s): the
    process Claude Code waits for ends before the model answers; the archive comes after."""
    import time

    env = {**hook_env(isolated_env), "MEMDIR_SERVICE": "off"}
    server.enqueue(200, openai_reply("staging-port"), delay=3.0)  # a slow model
    argv = [sys.executable, "-m", "memdir", "-w", str(ws), "hook", "session-end", "--detach"]
    began = time.monotonic()
    done = subprocess.run(
        argv, input=hook_input("SessionEnd"), env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""
    assert time.monotonic() - began < 3.0  # not waiting for the model
    archive = ws / "memory" / f"{TODAY}-staging-port.md"
    deadline = time.monotonic() + 90
    while not archive.is_file() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "- session: " in archive.read_text(encoding="utf-8")


def test_the_plugins_default_workspace_is_made_at_first_use_and_no_other(
    isolated_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code's plugin runs `memdir serve` and `memdir hook …` on the default workspace;
    a person who installed it without `memdir init ~/.memdir/workspace` met "Failed to
    connect" in `claude mcp list` and hooks that did nothing."""
    monkeypatch.delenv("MEMDIR_WORKSPACE", raising=False)
    default = isolated_env / "workspace"
    prompt = json.dumps({"session_id": "s1", "prompt": "which port does staging use?"})
    done = CliRunner().invoke(cli, ["hook", "user-prompt-submit"], input=prompt)
    assert done.exit_code == 0
    assert f"created the default workspace {default}" in done.stderr
    assert (default / "MEMORY.md").is_file() and (default / "memory").is_dir()
    again = CliRunner().invoke(cli, ["hook", "user-prompt-submit"], input=prompt)
    assert again.exit_code == 0 and "created" not in again.stderr

    named = tmp_path / "typo-notes"
    other = CliRunner().invoke(cli, ["-w", str(named), "hook", "session-start"], input="{}")
    assert other.exit_code == 0 and "does not exist: run `memdir init" in other.stderr
    assert not named.exists()


def test_memdir_serve_makes_the_default_workspace_and_answers(isolated_env: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MEMDIR_WORKSPACE"}
    env["MEMDIR_HOME"] = str(isolated_env)
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    done = subprocess.run(
        [sys.executable, "-m", "memdir", "serve", "--no-watch"],
        input=json.dumps(request) + "\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert "created the default workspace" in done.stderr, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["result"]["serverInfo"]["name"] == "memdir"
    assert (isolated_env / "workspace" / "MEMORY.md").is_file()
