"""`memdir chat` with native tool calls and streaming, end to end against real HTTP servers on
127.0.0.1: OpenAI tool_calls (JSON and SSE deltas), Anthropic tool_use events through the SDK,
a server that refuses tools (fallback, remembered, shown by `memdir status`), and Ctrl-C in the
middle of a streamed reply."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from memdir import FakeEmbedder, Memory
from memdir.agent.loop import ChatAgent
from memdir.agent.turn import INTERRUPTED_MARK
from memdir.cli import cli
from memdir.config.settings import LLMConfig
from memdir.llm.anthropic import AnthropicLLM
from memdir.llm.openai import OpenAIChatLLM
from tests.cli.test_chat_cli import chat, chat_requests, server, use_server, ws
from tests.llm.conftest import (
    anthropic_stream,
    openai_chunk,
    openai_reply,
    openai_stream,
    openai_text_stream,
)

__all__ = ["server", "ws"]  # fixtures shared with test_chat_cli

CONFIG = LLMConfig(context_window=8000, max_output_tokens=500)


def tool_call_reply(*calls: tuple[str, str, dict]) -> dict:
    answer = openai_reply("")
    answer["choices"][0]["message"] = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, n, a in calls
        ],
    }
    answer["choices"][0]["finish_reason"] = "tool_calls"
    return answer


def test_parallel_native_tool_calls_over_http(ws, server):
    use_server(server)
    server.enqueue(
        200,
        tool_call_reply(
            ("c1", "memory_write", {"text": "Staging DB is on 5433."}),
            ("c2", "memory_search", {"query": "green tea"}),
        ),
    )
    server.enqueue(200, openai_reply("Saved, and you like green tea."))

    result = chat("Note that staging DB is on 5433; what tea do I like?", args=("--no-capture",))

    assert result.exit_code == 0, result.output
    assert "Saved, and you like green tea." in result.stdout
    assert "memory_write: appended to the daily log" in result.stderr
    assert "memory_search: " in result.stderr
    first, second = chat_requests(server)[:2]
    assert [t["function"]["name"] for t in first["tools"]] == [
        "memory_search",
        "memory_get",
        "memory_write",
    ]
    assert second["messages"][-3]["tool_calls"][1]["id"] == "c2"
    assert [(m["role"], m["tool_call_id"]) for m in second["messages"][-2:]] == [
        ("tool", "c1"),
        ("tool", "c2"),
    ]
    assert "- Staging DB is on 5433." in (ws / "memory" / "2026-11-30.md").read_text()


def test_a_server_that_refuses_tools(ws, server):
    use_server(server)
    server.enqueue(400, {"error": {"message": "m does not support tools"}})
    server.enqueue(200, openai_reply("Hello in text mode."))

    result = chat("hello", args=("--no-recall",))

    assert result.exit_code == 0, result.output
    assert "Hello in text mode." in result.stdout
    assert "refused native tool calls" in result.stderr and "memdir status" in result.stderr
    refused, retried = chat_requests(server)[:2]
    assert "tools" in refused and "tools" not in retried
    assert '{"tool": "memory_search"' in retried["messages"][0]["content"]

    status = " ".join(CliRunner().invoke(cli, ["status"]).stdout.split())
    assert f"text protocol for openai · {server.url} · m" in status
    assert "tools refused 2026-11-30: m does not support tools" in status
    as_json = json.loads(CliRunner().invoke(cli, ["status", "--json"]).stdout)
    assert as_json["chat_tool_refusals"][0]["model"] == "m"

    # Remembered: the next session does not send tools at all.
    server.enqueue(200, openai_reply("Still text."))
    again = chat("hello again", args=("--no-recall",))
    assert again.exit_code == 0 and "refused" not in again.stderr
    assert "tools" not in chat_requests(server)[-3]

    # --tools native tries again, and forgets the refusal once tools work.
    server.enqueue(200, openai_reply("Native again."))
    native = chat("hi", args=("--no-recall", "--tools", "native"))
    assert native.exit_code == 0 and "Native again." in native.stdout
    assert (
        "native tool calls (no server has refused them)"
        in CliRunner().invoke(cli, ["status"]).stdout
    )


def test_tools_text_sends_no_tools(ws, server):
    use_server(server)
    server.enqueue(200, openai_reply("plain"))
    result = chat("hello", args=("--tools", "text", "--no-recall"))
    assert result.exit_code == 0
    assert "tools" not in chat_requests(server)[0]


def test_chat_status_says_how_tools_are_called(ws, server):
    use_server(server)
    result = chat("/status")
    assert "tools     native tool calls" in result.stdout


# --- streaming against the real clients ----------------------------------------------------


class CtrlCAfter:
    """Wraps a real LLM; its stream raises KeyboardInterrupt after ``events`` events, as
    Ctrl-C does while the terminal waits for the next piece."""

    def __init__(self, llm, events: int) -> None:
        self.llm, self.events = llm, events
        self.name, self.model = llm.name, llm.model
        self.closed = False

    def complete(self, *args, **kwargs):
        return self.llm.complete(*args, **kwargs)

    def chat(self, *args, **kwargs):
        return self.llm.chat(*args, **kwargs)

    def stream(self, *args, **kwargs) -> Iterator:
        inner = self.llm.stream(*args, **kwargs)
        try:
            for n, event in enumerate(inner):
                if n == self.events:
                    raise KeyboardInterrupt
                yield event
        finally:
            inner.close()
            self.closed = True


class Shown:
    """A TurnListener that keeps the text shown."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def text(self, delta: str) -> None:
        self.parts.append(delta)

    def tool_call(self, name: str) -> None:
        self.parts.append(f"<{name}>")

    def tool_result(self, line: str) -> None:
        pass

    def note(self, line: str) -> None:
        pass


def test_openai_stream_with_tool_calls_then_ctrl_c(workspace, server):
    server.enqueue(
        200,
        openai_stream(
            openai_chunk({"role": "assistant", "content": "Let me look. "}),
            openai_chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "memory_search", "arguments": '{"query":'},
                        }
                    ]
                }
            ),
            openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": ' "tea"}'}}]}),
            openai_chunk({}, "tool_calls"),
        ),
    )
    server.enqueue(200, openai_text_stream("You ", "like ", "green ", "tea ", "and more"))
    llm = CtrlCAfter(OpenAIChatLLM(server.url, "m", timeout=5.0, max_retries=1), events=99)
    with Memory(workspace, embedder=FakeEmbedder()) as memory:
        agent = ChatAgent(memory, llm, llm_config=CONFIG, stream=True, capture=False)
        shown = Shown()
        first = agent.handle("what tea?", shown)
        assert first.text == "You like green tea and more"
        assert shown.parts[:2] == ["Let me look. ", "<memory_search>"]

        server.enqueue(200, openai_text_stream("One ", "two ", "three ", "four"))
        llm.events = 2  # Ctrl-C after "One two "
        out = agent.handle("count", Shown())
        assert out.interrupted and out.text == "One two"
        assert llm.closed
        assert agent.session.history[-1].content == f"One two\n\n{INTERRUPTED_MARK}"

        server.enqueue(200, openai_text_stream("Fine."))
        llm.events = 99
        assert agent.handle("go on").text == "Fine."
        sent = server.requests[-1].json["messages"]
        assert sent[-2] == {"role": "assistant", "content": f"One two\n\n{INTERRUPTED_MARK}"}
        assert [m["role"] for m in sent[2:5]] == ["assistant", "tool", "assistant"]


def test_anthropic_stream_with_parallel_tool_use_then_ctrl_c(workspace, server):
    pytest.importorskip("anthropic")
    server.enqueue(
        200,
        anthropic_stream(
            ("text", ["Checking."]),
            ("tool_use", ("t1", "memory_search", ['{"query": ', '"tea"}'])),
            ("tool_use", ("t2", "memory_get", ['{"path": "MEMORY.md"}'])),
            stop="tool_use",
        ),
    )
    server.enqueue(200, anthropic_stream(("text", ["Green ", "tea."])))
    claude = AnthropicLLM("claude-test", "sk-ant-test-key", base_url=server.url, max_retries=1)
    llm = CtrlCAfter(claude, events=99)
    with Memory(workspace, embedder=FakeEmbedder()) as memory:
        agent = ChatAgent(memory, llm, llm_config=CONFIG, stream=True, capture=False)
        out = agent.handle("what tea?", Shown())
        assert out.text == "Green tea." and len(out.tools) == 2
        second = server.requests[1].json["messages"]
        assert [b["type"] for b in second[-2]["content"]] == ["text", "tool_use", "tool_use"]
        assert [b["tool_use_id"] for b in second[-1]["content"]] == ["t1", "t2"]

        server.enqueue(200, anthropic_stream(("text", ["Half ", "of ", "it"])))
        llm.events = 2  # after "Half " and "of ", Ctrl-C
        cut = agent.handle("more", Shown())
        assert cut.interrupted and cut.text.startswith("Half")
        assert agent.session.history[-1].content.endswith(INTERRUPTED_MARK)


def test_the_flush_turn_is_silent(workspace, server):
    """Flush and compaction go through complete(), never the stream: nothing reaches the
    screen from them."""
    server.enqueue(200, openai_text_stream("first answer"))
    llm = OpenAIChatLLM(server.url, "m", timeout=5.0, max_retries=1)
    # The window leaves room for the prompt and the tool definitions (~1,000 tokens).
    config = LLMConfig(context_window=2000, max_output_tokens=200)
    with Memory(workspace, embedder=FakeEmbedder()) as memory:
        agent = ChatAgent(memory, llm, llm_config=config, stream=True, capture=False, recall=False)
        agent.handle("hello", Shown())
        server.enqueue(200, openai_reply("- Remember: the flush saw this."))
        server.enqueue(200, openai_text_stream("second answer"))
        shown = Shown()
        out = agent.handle("x " * 760, shown)
    assert "memory flush: 1 line(s) saved" in " ".join(out.notes)
    assert "".join(shown.parts) == "second answer"
    flush = [r.json for r in server.requests if "stream" not in r.json]
    assert flush and "tools" not in flush[0]
