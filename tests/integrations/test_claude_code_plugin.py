"""This repository is a Claude Code plugin marketplace: the real ``claude`` (from npm) validates it,
adds it, installs ``memdir@memdir``, lists it enabled, runs its four hooks (through the
``memdir`` thin client on PATH) against a local fake of the Anthropic API, and connects its MCP
server, with no hook error in ``claude mcp list``.

Skipped, saying how to install it, where Claude Code is not installed (``.ci/run`` installs it
and sets ``MEMDIR_TEST_CLAUDE``). No login or network: ``ANTHROPIC_BASE_URL`` is the fake.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from memdir import init_workspace
from tests.helpers import CLAUDE_CODE, node_client, write
from tests.hooks.conftest import write_llm_config
from tests.hooks.test_claude_code_e2e import FACT, SESSION, AnthropicAPI, claude_code_env
from tests.http_server import run_server
from tests.llm.conftest import ChatServer, openai_reply
from tests.test_readme_mcp import README, shell_lines

REPO = Path(__file__).resolve().parents[2]
#: Where the README's lines have the reader's checkout.
CHECKOUT_PLACEHOLDER = "/path/to/memdir"


def _wait_for(find: Callable[[], Path | None], seconds: float = 90) -> Path:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = find()
        if found is not None:
            return found
        time.sleep(0.2)
    raise AssertionError(f"nothing after {seconds:.0f} s")


def test_the_repository_is_a_claude_code_marketplace_whose_plugin_runs_memdir(
    tmp_path: Path, isolated_env: Path
) -> None:
    claude = node_client(*CLAUDE_CODE)
    home = tmp_path / "home"
    project = home / "code" / "app"
    project.mkdir(parents=True)
    ws, _ = init_workspace(home / "notes", "en")
    write(ws, "MEMORY.md", f"# Memory\n\n## Project facts\n- {FACT}\n")
    with run_server(AnthropicAPI()) as api, run_server(ChatServer()) as llm:
        write_llm_config(isolated_env, llm.url)
        env = claude_code_env(home, isolated_env, api.url)
        # the plugin's hooks and MCP server run `memdir` from PATH, on the default workspace
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
        env["MEMDIR_WORKSPACE"] = str(ws)

        def run(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
            done = subprocess.run(
                [claude, *args], cwd=project, env=env, capture_output=True, text=True,
                timeout=timeout,
            )  # fmt: skip
            assert done.returncode == 0, " ".join(args) + "\n" + done.stdout + done.stderr
            return done

        assert "Validation passed" in run("plugin", "validate", str(REPO)).stdout
        run("plugin", "validate", str(REPO / "integrations" / "claude-code"))
        # the README's lines, as written (the checkout is this one)
        lines = [x for x in shell_lines(README.read_text()) if x.startswith("claude plugin ")]
        assert [x.split()[2] for x in lines] == ["marketplace", "install", "list"]
        for line in lines:
            local = line.replace(CHECKOUT_PLACEHOLDER, str(REPO))
            local = local.replace("claude ", f"{shlex.quote(claude)} ", 1)
            done = subprocess.run(
                ["bash", "-c", local], cwd=project, env=env, capture_output=True, text=True,
                timeout=120,
            )  # fmt: skip
            assert done.returncode == 0, line + "\n" + done.stdout + done.stderr
        (listed,) = json.loads(run("plugin", "list", "--json").stdout)
        assert listed["id"] == "memdir@memdir" and listed["enabled"] is True

        # A session: SessionStart and UserPromptSubmit add memory; SessionEnd archives it.
        llm.enqueue(200, openai_reply("staging-port"))
        session = run("-p", "--session-id", SESSION, "Which port does staging listen on?")
        assert "failed" not in session.stderr, session.stderr  # a failed hook is reported
        (sent,) = api.bodies()
        assert "<memdir-memory>" in sent and FACT in sent  # SessionStart
        assert "<relevant-memories>" in sent and "MEMORY.md#L" in sent  # UserPromptSubmit
        # SessionEnd runs detached (a plugin's SessionEnd hooks get 1.5 s): the archive follows
        archive = _wait_for(lambda: next((ws / "memory").glob("*-staging-port.md"), None))
        assert f"- session: {SESSION}" in archive.read_text(encoding="utf-8")
        # /compact: PreCompact flushes to today's daily log
        llm.enqueue(200, openai_reply("- Staging listens on port 5433 (from the plugin)."))
        run("-p", "--resume", SESSION, "/compact")
        logs = [p for p in (ws / "memory").glob("*.md") if len(p.stem) == 10]
        assert logs and "(from the plugin)" in logs[0].read_text(encoding="utf-8")

        mcp = run("mcp", "list", timeout=180)
        assert "failed" not in mcp.stdout + mcp.stderr, mcp.stdout + mcp.stderr
        line = next(x for x in mcp.stdout.splitlines() if "memdir" in x)
        assert "Connected" in line, mcp.stdout

        # Installed without `memdir init`: the default workspace is made at first use.
        del env["MEMDIR_WORKSPACE"]
        assert not (isolated_env / "workspace").exists()
        mcp = run("mcp", "list", timeout=180)
        line = next(x for x in mcp.stdout.splitlines() if x.startswith("plugin:memdir:memdir"))
        assert "Connected" in line, mcp.stdout
        assert (isolated_env / "workspace" / "MEMORY.md").is_file()
