"""Claude Code itself (from npm) against the per-user service: the hooks `memdir hooks install
claude-code --http` writes (SessionStart a command through the thin client, UserPromptSubmit
and SessionEnd HTTP hooks in settings.local.json, the token in their own header), and
`claude mcp add --transport http` + `claude mcp list` over the service's MCP endpoint. Claude
Code talks to a local fake of the Anthropic API; memdir's LLM is a local OpenAI-compatible fake.
Skipped where Claude Code is not installed (.ci/run installs it)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from memdir import init_workspace
from memdir.service import daemon
from tests.helpers import CLAUDE_CODE, node_client, write
from tests.hooks.conftest import write_llm_config
from tests.hooks.test_claude_code_e2e import FACT, SESSION, AnthropicAPI, claude_code_env
from tests.http_server import run_server
from tests.llm.conftest import ChatServer, openai_reply
from tests.service.conftest import start_service


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_claude_code_runs_http_hooks_and_mcp_over_http(tmp_path: Path, isolated_env: Path) -> None:
    claude = node_client(*CLAUDE_CODE)
    home = tmp_path / "home"
    project = home / "code" / "app"
    project.mkdir(parents=True)
    ws, _ = init_workspace(home / "notes", "en")
    write(ws, "MEMORY.md", f"# Memory\n\n## Project facts\n- {FACT}\n")
    with run_server(AnthropicAPI()) as api, run_server(ChatServer()) as llm:
        write_llm_config(isolated_env, llm.url)
        port = _free_port()
        with (isolated_env / "config.toml").open("a", encoding="utf-8") as config:
            config.write(f"[service]\nport = {port}\n")
        # The service runs with the HOME Claude Code runs with: it reads transcripts only from
        # Claude Code's projects folder there.
        service = start_service(
            isolated_env, port=port, MEMDIR_TEST_LLM_KEY="sk-test", HOME=str(home)
        )
        try:
            env = claude_code_env(home, isolated_env, api.url)
            env.pop("MEMDIR_SERVICE", None)
            install = [sys.executable, "-m", "memdir", "hooks", "install", "claude-code", "--http"]
            done = subprocess.run(
                [*install, "-w", str(ws)], cwd=project, env=env, capture_output=True, text=True
            )
            assert done.returncode == 0, done.stderr
            assert "UserPromptSubmit: HTTP" in done.stdout
            local = project / ".claude" / "settings.local.json"
            assert service.token in local.read_text(encoding="utf-8")

            llm.enqueue(200, openai_reply("staging-port"))
            run = subprocess.run(
                [claude, "-p", "--session-id", SESSION, "Which port does staging listen on?"],
                cwd=project,
                env=env,
                capture_output=True,
                text=True,
                timeout=240,
            )
            assert run.returncode == 0, run.stdout + run.stderr
            assert "failed" not in run.stderr, run.stderr
            (sent,) = api.bodies()
            assert "<memdir-memory>" in sent and FACT in sent  # SessionStart (thin client)
            assert "<relevant-memories>" in sent and "MEMORY.md#L" in sent  # HTTP hook
            (archive,) = (ws / "memory").glob("*-staging-port.md")  # SessionEnd over HTTP
            assert f"- session: {SESSION}" in archive.read_text(encoding="utf-8")
            assert {"workspace": str(ws), "scope": "private"} in service.served()

            url = f"http://127.0.0.1:{port}/mcp?workspace={ws}"
            header = f"Authorization: Bearer {service.token}"
            add = [claude, "mcp", "add", "--transport", "http", "memdir", url, "--header", header]
            done = subprocess.run(add, cwd=project, env=env, capture_output=True, text=True)
            assert done.returncode == 0, done.stdout + done.stderr
            listed = subprocess.run(
                [claude, "mcp", "list"],
                cwd=project,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            line = next(x for x in listed.stdout.splitlines() if x.startswith("memdir"))
            assert "Connected" in line, listed.stdout + listed.stderr
            # `claude mcp list` runs SessionEnd without the settings' env: the HTTP hook's
            # token is in its own header, so no "SessionEnd hook … failed: HTTP 401"
            assert "failed" not in listed.stdout + listed.stderr, listed.stdout + listed.stderr
        finally:
            daemon.stop()
