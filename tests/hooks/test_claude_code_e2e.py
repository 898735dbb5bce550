"""Claude Code itself runs memdir's hooks: the real ``claude`` (from npm) against a local fake of
the Anthropic API, memdir's LLM a local OpenAI-compatible fake.

Skipped, saying how to install it, where Claude Code is not installed (``.ci/run`` installs it
and sets ``MEMDIR_TEST_CLAUDE``). No login or network is needed: ``ANTHROPIC_BASE_URL`` points
Claude Code at the fake.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memdir import init_workspace
from tests.helpers import CLAUDE_CODE, node_client, write
from tests.hooks.conftest import write_llm_config
from tests.http_server import PROVIDER_ENV, ScriptedServer, run_server
from tests.llm.conftest import ChatServer, anthropic_stream, openai_reply

SESSION = "2f6c1e0a-3b4d-4e5f-8a9b-0c1d2e3f4a5b"
FACT = "Staging listens on port 5433."


@dataclass
class AnthropicAPI(ScriptedServer):
    """The Messages API as Claude Code calls it: every message answered "Noted." (streamed);
    ``bodies`` holds each request's JSON text."""

    def default_answer(self, target: str, payload: Any) -> tuple[int, Any]:
        if "count_tokens" in target:
            return 200, {"input_tokens": 100}
        return 200, anthropic_stream(("text", ["Noted."]))

    def bodies(self) -> list[str]:
        return [json.dumps(r.json) for r in self.requests if "count_tokens" not in r.path]


def claude_code_env(home: Path, memdir_home: Path, api_url: str) -> dict[str, str]:
    """The environment Claude Code runs in here: its own HOME, memdir's home, the fake API, no
    provider keys of the machine, nothing sent elsewhere."""
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_ENV}
    env.update(
        HOME=str(home),
        MEMDIR_HOME=str(memdir_home),
        MEMDIR_TEST_LLM_KEY="sk-test",
        ANTHROPIC_BASE_URL=api_url,
        ANTHROPIC_API_KEY="sk-ant-test",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
    )
    return env


@pytest.fixture
def claude() -> str:
    return node_client(*CLAUDE_CODE)


@pytest.fixture
def servers() -> Iterator[tuple[AnthropicAPI, ChatServer]]:
    with run_server(AnthropicAPI()) as api, run_server(ChatServer()) as llm:
        yield api, llm


def test_claude_code_runs_all_four_hooks(
    claude: str, servers: tuple[AnthropicAPI, ChatServer], tmp_path: Path, isolated_env: Path
) -> None:
    api, llm = servers
    home = tmp_path / "home"
    project = home / "code" / "app"
    project.mkdir(parents=True)
    write_llm_config(isolated_env, llm.url)
    ws, _ = init_workspace(home / "notes", "en")
    write(ws, "MEMORY.md", f"# Memory\n\n## Project facts\n- {FACT}\n")
    env = claude_code_env(home, isolated_env, api.url)
    install = [sys.executable, "-m", "memdir", "hooks", "install", "claude-code", "-w", str(ws)]
    subprocess.run(install, cwd=project, env=env, check=True, capture_output=True)

    def run_claude(*args: str) -> None:
        done = subprocess.run(
            [claude, "-p", *args], cwd=project, env=env, capture_output=True, text=True, timeout=240
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "failed" not in done.stderr, done.stderr  # Claude Code reports a failed hook

    # A session: SessionStart and UserPromptSubmit add memory; SessionEnd archives it.
    llm.enqueue(200, openai_reply("staging-port"))
    run_claude("--session-id", SESSION, "Which port does staging listen on?")
    (sent,) = api.bodies()
    assert "<memdir-memory>" in sent and FACT in sent  # SessionStart
    assert "<relevant-memories>" in sent and "MEMORY.md#L" in sent  # UserPromptSubmit
    (archive,) = (ws / "memory").glob("*-staging-port.md")
    text = archive.read_text(encoding="utf-8")
    assert f"- session: {SESSION}" in text and "Which port does staging listen on?" in text

    # /compact: PreCompact flushes durable facts to today's daily log (before Claude Code
    # decides whether there is enough to compact).
    llm.enqueue(200, openai_reply("- Staging listens on port 5433 (asked in Claude Code)."))
    run_claude("--resume", SESSION, "/compact")
    logs = [p for p in (ws / "memory").glob("*.md") if len(p.stem) == 10]
    assert logs and "(asked in Claude Code)" in logs[0].read_text(encoding="utf-8")
    flush_request = json.dumps(llm.requests[1].json)
    assert "Which port does staging listen on?" in flush_request
    assert len(llm.requests) == 2  # the second SessionEnd had nothing new to archive
