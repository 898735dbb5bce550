"""The interactive terminal of `memdir chat`: the line editor (through prompt_toolkit's pipe
input), the status line, the progressive Markdown rendering, and whole turns drawn live."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from memdir import FakeEmbedder, Memory, ScriptedLLM
from memdir.agent.loop import ChatAgent
from memdir.cli.chat_cmds import _interactive
from memdir.cli.chat_render import (
    MarkdownStream,
    PlainView,
    TerminalView,
    finished_blocks_end,
    render_markdown,
)
from memdir.cli.chat_tui import LinePrompt, command_completions, history_path, toolbar_text
from memdir.config.settings import LLMConfig
from memdir.llm import ChatReply, ToolCall

CONFIG = LLMConfig(context_window=8000, max_output_tokens=500)


@pytest.fixture
def agent(workspace: Path):
    with Memory(workspace, embedder=FakeEmbedder()) as memory:
        yield ChatAgent(memory, ScriptedLLM(), llm_config=CONFIG, recall=False, capture=False)


def read_lines(agent: ChatAgent, typed: str, count: int = 1) -> list[str]:
    with create_pipe_input() as pipe:
        pipe.send_text(typed)
        prompt = LinePrompt(agent, input=pipe, output=DummyOutput())
        return [prompt.read() for _ in range(count)]


# --- the line editor --------------------------------------------------------------------


def test_enter_sends_and_both_ways_of_a_new_line(agent):
    typed = "one line\rfirst\\\rsecond\ralpha\x1b\rbeta\r"  # trailing \ ; Esc-Enter
    assert read_lines(agent, typed, 3) == ["one line", "first\nsecond", "alpha\nbeta"]


def test_enter_takes_the_only_completion_then_sends_it(agent):
    assert read_lines(agent, "/sta\r\r") == ["/status"]
    assert read_lines(agent, "/status\r") == ["/status"]


def test_history_is_kept_privately_under_memdir_home(agent, isolated_env):
    read_lines(agent, "remember the redis port\r")
    assert history_path() == isolated_env / "chat_history"
    assert "remember the redis port" in history_path().read_text()
    assert os.stat(history_path()).st_mode & 0o077 == 0
    # Up brings it back in the next session.
    assert read_lines(agent, "\x1b[A\r") == ["remember the redis port"]


def test_slash_commands_complete():
    assert [name for name, _ in command_completions("/")] == [
        "/new",
        "/compact",
        "/remember",
        "/search",
        "/status",
        "/help",
        "/quit",
    ]
    assert [name for name, _ in command_completions("/s")] == ["/search", "/status"]
    assert command_completions("/search redis") == []
    assert command_completions("hello") == []


def test_the_status_line(agent):
    line = toolbar_text(agent)
    assert line.startswith("fake/scripted · native tools · context ")
    assert f"/{agent.budget:,} (" in line and "last turn" not in line
    agent.llm.enqueue(ChatReply("ok"))
    agent.handle("hello")
    assert "last turn 1 req, ~" in toolbar_text(agent)  # ~: the fake reports no usage


# --- rendering Markdown while it streams -------------------------------------------------


class FakeLive:
    def __init__(self) -> None:
        self.shown = ""

    def update(self, renderable, refresh: bool = False) -> None:
        self.shown = str(renderable)


def test_finished_blocks_end_at_the_last_blank_line_outside_a_fence():
    assert finished_blocks_end("para one\n\npara tw") == len("para one\n\n")
    assert finished_blocks_end("no blank line yet\n") == 0
    text = "intro\n\n```py\nx = 1\n\ny = 2\n"
    assert finished_blocks_end(text) == len("intro\n\n")  # the blank inside the fence is not
    assert finished_blocks_end(text + "```\n\nafter") == len(text + "```\n\n")


def test_finished_blocks_are_printed_once_and_the_rest_stays_live():
    reply = "# Plan\n\n- one\n- two\n\n```bash\nredis-cli -p 6380 ping\n```\n\nDone, **6380**."
    out = io.StringIO()
    console = Console(file=out, width=50, height=30, force_terminal=False)
    live = FakeLive()
    stream = MarkdownStream(console, live, clock=iter(range(10_000)).__next__)

    for n in range(0, len(reply), 3):
        stream.add(reply[n : n + 3])
        if n == 30:  # the heading and the list are finished: they are printed
            assert "Plan" in out.getvalue() and "• two" in out.getvalue()
            assert "redis-cli" not in out.getvalue()
    assert "Done" not in out.getvalue() and "Done" in live.shown
    stream.finish()

    printed = out.getvalue().rstrip("\n").split("\n")
    assert printed == render_markdown(reply, console)  # every line once, in order
    assert live.shown == ""


def test_a_block_taller_than_the_screen_scrolls_out_as_it_grows():
    code = "```\n" + "".join(f"line {n}\n" for n in range(40))
    out = io.StringIO()
    console = Console(file=out, width=40, height=12, force_terminal=False)
    live = FakeLive()
    stream = MarkdownStream(console, live, clock=iter(range(10_000)).__next__)
    stream.add(code)
    assert "line 0" in out.getvalue() and "line 39" not in out.getvalue()
    assert len(live.shown.split("\n")) <= 12


def test_a_whole_turn_in_a_terminal_view(workspace):
    out = io.StringIO()
    console = Console(file=out, width=60, force_terminal=True, color_system=None)
    llm = ScriptedLLM(
        [
            ChatReply("Checking.", (ToolCall("c", "memory_search", '{"query": "x"}'),)),
            "Found **it**.",
        ]
    )
    with Memory(workspace, embedder=FakeEmbedder()) as memory:
        agent = ChatAgent(memory, llm, llm_config=CONFIG, stream=True, capture=False)
        with TerminalView(console) as view:
            agent.handle("where?", view)
    text = out.getvalue()
    assert text.index("Checking.") < text.index("memory_search: ") < text.index("Found it.")
    assert "**" not in text  # rendered as Markdown


# --- the interactive loop without a terminal (input() and plain output) -------------------


def test_streamed_turns_and_ctrl_c_through_the_plain_loop(workspace, monkeypatch, capsys):
    lines = iter(["tell me", "again", "/quit"])
    monkeypatch.setattr("builtins.input", lambda prompt: next(lines))
    llm = ScriptedLLM([["Half ", "a rep", KeyboardInterrupt()], "Whole reply.", '{"items": []}'])
    with Memory(workspace, embedder=FakeEmbedder()) as memory:
        agent = ChatAgent(memory, llm, llm_config=CONFIG, stream=True, capture=False)
        _interactive(agent)
        history = agent.session.history
    shown = capsys.readouterr().out
    assert "Half a rep\n" in shown and "interrupted: what was shown is kept" in shown
    assert "Whole reply." in shown
    assert history[1].content.startswith("Half a rep\n\n[interrupted")


def test_plain_view_keeps_notes_on_their_own_lines():
    out = io.StringIO()
    view = PlainView(Console(file=out, width=80))
    with view:
        view.text("Looking")
        view.tool_result("memory_search: 1 result(s)")
        view.text("Found.")
    assert out.getvalue() == "Looking\n  · memory_search: 1 result(s)\nFound.\n"
