"""Real OpenClaw (from npm) with memdir's memory plugin (``integrations/openclaw``): installed with
``openclaw plugins install --link`` it is OpenClaw's memory slot; ``openclaw memdir search``
answers from memdir; an agent turn, driven by a scripted OpenAI-compatible model on 127.0.0.1
(:class:`tests.integrations.tool_model.ToolModel`), calls ``memory_search`` and gets memdir's hit
with its citation, auto-recall prepends it, auto-capture keeps what the user asked to remember,
the pre-compaction flush appends to memdir's daily log; with the service stopped, the tool
answers at once that memory is unavailable and why.

Skipped, saying how to install them, where OpenClaw or Node.js 24.16+ is missing (``.ci/run``
installs both into a throwaway prefix and sets ``MEMDIR_TEST_OPENCLAW``). No network: the model
is local and OpenClaw's update checks are off.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memdir import Memory
from memdir.clock import now
from tests.helpers import node_client
from tests.http_server import PROVIDER_ENV, run_server
from tests.integrations.tool_model import FLUSHED, ToolModel
from tests.test_readme_mcp import README, fenced_blocks

REPO = Path(__file__).resolve().parents[2]
OPENCLAW = ("MEMDIR_TEST_OPENCLAW", "openclaw", "openclaw@2026.9.6")
FACT = "The staging database listens on port 5433."
REMEMBER = "Remember that the cache cluster listens on port 6380."
#: The plugin's default time limit for a tool call (openclaw.plugin.json, timeoutMs).
TOOL_TIMEOUT_S = 4.0


#: Where the README's lines have the reader's checkout.
CHECKOUT_PLACEHOLDER = "/path/to/memdir"


@dataclass
class OpenClaw:
    executable: str
    env: dict[str, str]
    home: Path
    workspace: Path
    model: ToolModel

    def memdir(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "memdir", *args], env=self.env, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip

    def bash(self, line: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", line], cwd=self.home, env=self.env, capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.executable, *args],
            cwd=self.home,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def turn(self, session: str, message: str) -> dict[str, Any]:
        done = self.run(
            "agent", "--local", "--agent", "main", "--session-key", session,
            "--message", message, "--json",
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        reply: dict[str, Any] = json.loads(done.stdout)
        return reply

    def config(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.config_path.read_text(encoding="utf-8"))
        return data

    @property
    def config_path(self) -> Path:
        return self.home / ".openclaw" / "openclaw.json"


def readme_lines() -> list[str]:
    """The bash lines of the README's OpenClaw section, as written."""
    section = README.read_text(encoding="utf-8").split("## OpenClaw", 1)[1].split("\n## ", 1)[0]
    (body,) = [body for lang, body in fenced_blocks(section) if lang == "bash"]
    return [line.strip() for line in body.splitlines() if line.strip()]


def openclaw_executable() -> str:
    executable = node_client(*OPENCLAW)
    node = shutil.which("node", path=os.environ.get("PATH"))
    version = subprocess.run([node or "node", "--version"], capture_output=True, text=True)
    major, minor = (int(p) for p in version.stdout.strip().lstrip("v").split(".")[:2])
    if (major, minor) < (24, 16):
        pytest.skip(f"OpenClaw needs Node.js 24.16 or later (PATH has {version.stdout.strip()})")
    return executable


@pytest.fixture(scope="module")
def openclaw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenClaw]:
    executable = openclaw_executable()
    root = tmp_path_factory.mktemp("openclaw")
    home, memdir_home = root / "home", root / "memdir-home"
    workspace = home / ".openclaw" / "workspace"
    workspace.mkdir(parents=True)
    memdir_home.mkdir()
    (memdir_home / "config.toml").write_text('[embedding]\nprovider = "fake"\n')
    (workspace / "MEMORY.md").write_text(f"# Memory\n\n## Project facts\n- {FACT}\n")
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_ENV}
    bin_dirs = [str(Path(executable).parent), str(Path(sys.executable).parent)]
    env.update(
        HOME=str(home),
        MEMDIR_HOME=str(memdir_home),
        OPENCLAW_DISABLE_UPDATE_CHECK="1",
        NO_COLOR="1",
        PATH=os.pathsep.join([*bin_dirs, env["PATH"]]),
    )
    env.pop("MEMDIR_SERVICE", None)
    with run_server(ToolModel()) as model:
        claw = OpenClaw(executable, env, home, workspace, model)
        try:
            # the README's lines, as written (the checkout is this one)
            for line in readme_lines():
                done = claw.bash(line.replace(CHECKOUT_PLACEHOLDER, str(REPO)))
                assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
            _configure(claw, model.url)
            yield claw
        finally:
            claw.memdir("daemon", "stop")


def _configure(claw: OpenClaw, model_url: str) -> None:
    """What the README leaves to the user: a model (the local one), and a compaction (with its
    memory flush) on every turn after the first of a session."""
    config = claw.config()
    config["models"] = {
        "providers": {
            "local": {
                "baseUrl": f"{model_url}/v1",
                "apiKey": "sk-test",
                "api": "openai-completions",
                "models": [
                    {
                        "id": "m",
                        "name": "scripted",
                        "reasoning": False,
                        "input": ["text"],
                        "contextWindow": 128000,
                        "maxTokens": 4096,
                    }
                ],
            }
        }
    }
    config.setdefault("agents", {})["defaults"] = {
        "model": {"primary": "local/m"},
        "compaction": {
            "maxActiveTranscriptBytes": 1,
            "memoryFlush": {"forceFlushTranscriptBytes": 1},
        },
    }
    claw.config_path.write_text(json.dumps(config, indent=2), encoding="utf-8")


def test_openclaw_loads_memdir_as_its_memory_slot(openclaw: OpenClaw) -> None:
    plugins = openclaw.config()["plugins"]
    assert plugins["slots"]["memory"] == "memdir"
    assert plugins["entries"]["memory-core"]["enabled"] is False
    assert plugins["entries"]["memdir"]["hooks"] == {"allowConversationAccess": True}
    done = openclaw.run("plugins", "inspect", "memdir", "--runtime", "--json")
    assert done.returncode == 0, done.stderr
    inspected = json.loads(done.stdout)
    plugin = inspected["plugin"]
    assert plugin["status"] == "loaded", plugin
    assert plugin["activationReason"] == "selected memory slot"
    assert plugin["toolNames"] == ["memory_search", "memory_get"]
    hooks = {hook["name"] for hook in inspected["typedHooks"]}  # allowed conversation access
    assert {"before_prompt_build", "agent_end"} <= hooks
    assert plugin["cliCommands"] == ["memdir"]


def test_openclaw_memdir_search_answers_from_memdir(openclaw: OpenClaw) -> None:
    done = openclaw.run("memdir", "search", "staging database port", "--json")
    assert done.returncode == 0, done.stderr
    (hit, *_) = json.loads(done.stdout[done.stdout.index("{") :])["results"]
    assert hit["path"] == "MEMORY.md" and hit["citation"] == "MEMORY.md#L4-L4"
    assert "5433" in hit["snippet"]
    status = openclaw.run("memdir", "status")
    assert status.returncode == 0 and str(openclaw.workspace) in status.stdout, status.stderr


def test_an_agent_turn_searches_memdir_recalls_captures_and_flushes(openclaw: OpenClaw) -> None:
    model = openclaw.model
    first = len(model.requests)
    reply = openclaw.turn("agent:main:memdir-e2e", f"Which port does staging use? {REMEMBER}")
    bodies = model.bodies()[first:]
    sent = json.dumps(bodies[0])
    # auto-recall: memdir's hit, fenced as untrusted, before the user's message
    assert "<relevant-memories>" in sent and "MEMORY.md#L4-L4" in sent
    assert "## Memory Recall" in sent  # the plugin's prompt section
    # the model called memory_search and got memdir's hit with its citation
    results = [m["content"] for b in bodies for m in b["messages"] if m.get("role") == "tool"]
    assert results and "MEMORY.md#L4-L4" in results[-1] and "5433" in results[-1]
    assert "5433" in json.dumps(reply["payloads"])
    # auto-capture (agent_end): what the user asked to remember is in today's daily log
    daily = openclaw.workspace / "memory" / f"{now().date().isoformat()}.md"
    assert "6380" in daily.read_text(encoding="utf-8")

    # the next turn compacts the session: the memory flush appends to the daily log first
    openclaw.turn("agent:main:memdir-e2e", "And which port does the cache use?")
    assert FLUSHED in daily.read_text(encoding="utf-8")
    with Memory(openclaw.workspace) as memory:
        found = memory.search("Argo CD p-913").results
    assert found and found[0].path == daily.relative_to(openclaw.workspace).as_posix()


def test_with_the_service_stopped_the_tool_says_so_within_its_time_limit(
    openclaw: OpenClaw,
) -> None:
    model = openclaw.model
    assert openclaw.memdir("daemon", "stop").returncode == 0
    first = len(model.requests)
    reply = openclaw.turn("agent:main:memdir-down", "Which port does staging use?")
    bodies, times = model.bodies()[first:], model.times[first:]
    called = next(
        i for i, b in enumerate(bodies) if any(m.get("role") == "tool" for m in b["messages"])
    )
    tool = next(m["content"] for m in bodies[called]["messages"] if m.get("role") == "tool")
    assert "the memdir service" in tool and "memdir daemon start" in tool
    assert '"unavailable": true' in tool
    assert times[called] - times[called - 1] < TOOL_TIMEOUT_S  # no hung turn
    assert reply["payloads"]
