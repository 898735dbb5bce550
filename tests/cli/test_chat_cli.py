"""``memdir chat`` and ``memdir compact`` end to end: the real OpenAI-compatible client talking to
a real HTTP server on 127.0.0.1, scripted one line per message through stdin."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from memdir import FakeEmbedder, Memory, ScriptedLLM
from memdir.agent.loop import ChatAgent
from memdir.cli import cli
from memdir.cli.chat_cmds import _interactive
from memdir.config.settings import LLMConfig
from tests.helpers import write
from tests.http_server import PROVIDER_ENV, run_server
from tests.llm.conftest import ChatServer, openai_reply


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with run_server(ChatServer()) as app:
        yield app


@pytest.fixture
def ws(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMDIR_WORKSPACE", str(workspace))
    monkeypatch.setenv("MEMDIR_NOW", "2026-11-30T09:00")
    write(workspace, "MEMORY.md", "# Memory\n\n## Preferences\n- Likes green tea.\n")
    configure()
    return workspace


def configure(llm: str = "") -> None:
    home = Path(os.environ["MEMDIR_HOME"])
    text = '[embedding]\nprovider = "fake"\n'
    if llm:
        text += f"[llm]\n{llm}\n"
    (home / "config.toml").write_text(text, encoding="utf-8")


def use_server(server: ChatServer, **extra: object) -> None:
    settings = {"provider": "openai", "base_url": server.url, "model": "m", "timeout": 5.0}
    settings.update(extra)
    configure("\n".join(f"{k} = {json.dumps(v)}" for k, v in settings.items()))


def chat(*lines: str, args: tuple[str, ...] = ()) -> object:
    return CliRunner().invoke(cli, ["chat", *args], input="".join(f"{line}\n" for line in lines))


def chat_requests(server: ChatServer) -> list[dict]:
    return [r.json for r in server.requests if r.path.endswith("/chat/completions")]


def test_without_an_llm_it_says_what_to_set(ws):
    result = chat("hello")
    assert result.exit_code == 1
    assert "no LLM configured" in result.stderr
    for setting in ("[llm]", "MEMDIR_LLM_BASE_URL", "MEMDIR_LLM_MODEL", "MEMDIR_LLM_API_KEY"):
        assert setting in result.stderr
    assert result.stderr.count("\n") == 1  # one line


def test_chat_over_http(ws, server):
    use_server(server)
    server.enqueue(200, openai_reply("Hello! What shall we work on?"))

    result = chat("hello there", "/status", "/quit")

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Hello! What shall we work on?\n")
    assert "tokens" in result.stdout and "openai / m" in result.stdout
    first = chat_requests(server)[0]
    assert first["model"] == "m"
    system, *messages = first["messages"]
    assert system["role"] == "system" and "memory_search" in system["content"]
    assert "Likes green tea." in system["content"]  # private session: MEMORY.md is loaded
    assert messages[-1] == {"role": "user", "content": "hello there"}
    # /quit ran extraction; the echo server's answer is not JSON: retried once, then skipped.
    assert len(chat_requests(server)) == 3
    assert "not valid JSON twice" in result.stderr
    assert (ws / "MEMORY.md").read_text() == "# Memory\n\n## Preferences\n- Likes green tea.\n"
    [transcript] = (ws / ".memdir" / "sessions").glob("*.jsonl")
    assert '"hello there"' in transcript.read_text()


def test_retries_a_server_error_then_answers(ws, server):
    use_server(server, max_retries=2)
    server.enqueue(500, {"error": {"message": "overloaded"}}, headers={"Retry-After": "0"})
    server.enqueue(200, openai_reply("after a retry"))
    result = chat("hello", args=("--no-recall",))
    assert result.exit_code == 0, result.output
    assert "after a retry" in result.stdout
    assert chat_requests(server)[0] == chat_requests(server)[1]


def test_a_timeout_is_retried(ws, server):
    use_server(server, timeout=0.4, max_retries=2)
    server.enqueue(200, openai_reply("too slow"), delay=1.5)
    server.enqueue(200, openai_reply("in time"))
    result = chat("hello")
    assert result.exit_code == 0, result.output
    assert "in time" in result.stdout and "too slow" not in result.stdout


def test_a_failing_provider_exits_1_and_keeps_the_message(ws, server):
    use_server(server, max_retries=1)
    server.enqueue(503, {"error": {"message": "down for maintenance"}})
    result = chat("please remember nothing", "/quit")
    assert result.exit_code == 1
    assert "memdir: error: the model failed, your message is kept" in result.stderr
    assert "HTTP 503" in result.stderr
    [transcript] = (ws / ".memdir" / "sessions").glob("*.jsonl")
    assert "please remember nothing" in transcript.read_text()


def test_tool_calls_over_http(ws, server):
    use_server(server)
    server.enqueue(
        200, openai_reply('{"tool": "memory_write", "args": {"text": "Staging DB is on 5433."}}')
    )
    server.enqueue(200, openai_reply("Saved it."))

    result = chat("Note that staging DB is on 5433", args=("--no-capture",))

    assert result.exit_code == 0, result.output
    assert "Saved it." in result.stdout
    assert "memory_write: appended to the daily log" in result.stderr
    assert "- Staging DB is on 5433." in (ws / "memory" / "2026-11-30.md").read_text()
    second = chat_requests(server)[1]["messages"]
    assert second[-1]["role"] == "user"
    assert second[-1]["content"].startswith("[tool result] memory_write\n")


def test_environment_variables_are_enough(ws, server, monkeypatch):
    monkeypatch.setenv("MEMDIR_LLM_BASE_URL", server.url)
    monkeypatch.setenv("MEMDIR_LLM_MODEL", "env-model")
    server.enqueue(200, openai_reply("configured by environment"))
    result = chat("hello")
    assert result.exit_code == 0, result.output
    assert "configured by environment" in result.stdout
    assert chat_requests(server)[0]["model"] == "env-model"
    assert (
        "memdir: llm openai: environment: MEMDIR_LLM_BASE_URL set while llm.provider is 'none'"
        in result.stderr
    )


def test_a_configured_provider_is_not_announced(ws, server):
    use_server(server)
    server.enqueue(200, openai_reply("hi"))
    result = chat("hello")
    assert result.exit_code == 0, result.output
    assert "memdir: llm" not in result.stderr


def test_shared_session_over_http(ws, server):
    use_server(server)
    server.enqueue(200, openai_reply("I cannot see that here."))
    result = chat("what tea do I like", args=("--shared",))
    assert result.exit_code == 0, result.output
    request = json.dumps(chat_requests(server)[0], ensure_ascii=False)
    assert "green tea" not in request


def test_new_archives_the_session(ws, server):
    use_server(server)
    server.enqueue(200, openai_reply("Hi!"))
    server.enqueue(200, openai_reply("NO_REPLY"))  # the memory flush before /new
    server.enqueue(200, openai_reply("greeting-chat"))  # the archive's slug
    server.enqueue(200, openai_reply('{"items": []}'))  # extraction
    result = chat("hello", "/new")
    assert result.exit_code == 0, result.output
    assert "new session started" in result.stdout
    archive = ws / "memory" / "2026-11-30-greeting-chat.md"
    assert "**user:**\nhello" in archive.read_text()


def test_compact_a_saved_session_and_resume_it(ws, server):
    use_server(server)
    lines = [f"message number {n} about the billing service" for n in range(5)]
    assert chat(*lines, "/quit", args=("--no-recall",)).exit_code == 0
    server.enqueue(200, openai_reply("NO_REPLY"))
    server.enqueue(200, openai_reply("## Decisions\n- Billing first.\n"))

    result = CliRunner().invoke(cli, ["compact"])

    assert result.exit_code == 0, result.output
    assert "compacted: 4 messages" in result.stdout
    server.enqueue(200, openai_reply("Continuing."))
    resumed = chat("go on", args=("--resume", "last"))
    assert resumed.exit_code == 0, resumed.output
    [last] = [
        r["messages"] for r in chat_requests(server) if r["messages"][-1]["content"] == "go on"
    ]
    assert last[1]["role"] == "user" and "- Billing first." in last[1]["content"]
    assert [m["content"] for m in last[2:4]] == [lines[2], "echo: " + lines[2]]


def test_compact_failure_exits_1(ws, server):
    use_server(server, max_retries=1)
    assert chat(*[f"turn {n}" for n in range(5)], args=("--no-recall",)).exit_code == 0
    server.enqueue(200, openai_reply("NO_REPLY"))
    server.enqueue(500, {"error": {"message": "boom"}})
    result = CliRunner().invoke(cli, ["compact"])
    assert result.exit_code == 1
    assert "history kept" in result.stderr
    missing = CliRunner().invoke(cli, ["compact", "--session", "nope"])
    assert missing.exit_code == 1 and "no chat session 'nope'" in missing.stderr


def test_interactive_prompt_shows_the_token_meter(workspace, monkeypatch, capsys):
    prompts: list[str] = []
    lines = iter(["hello", "/quit"])

    def fake_input(prompt: str) -> str:
        prompts.append(prompt)
        return next(lines)

    monkeypatch.setattr("builtins.input", fake_input)
    llm = ScriptedLLM(["Hi there.", '{"items": []}'])
    config = LLMConfig(context_window=8000, max_output_tokens=500)
    with Memory(workspace, embedder=FakeEmbedder()) as memory:
        _interactive(ChatAgent(memory, llm, llm_config=config))
    assert prompts[0].endswith("/6,400 tok] you> ") and prompts[0].startswith("[")
    assert int(prompts[0][1:].split("/")[0].replace(",", "")) > 100
    assert "Hi there." in capsys.readouterr().out
