"""The chat loop with a scripted model: tools, triggers, thresholds and slash commands."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from memdir import Memory, ProviderResponseError, ScriptedLLM
from memdir.agent.loop import ChatAgent
from memdir.config.settings import LLMConfig
from memdir.llm import LLMCall, Message
from tests.helpers import write

SMALL = LLMConfig(context_window=4000, max_output_tokens=500)  # budget 3,200; flush at 3,000
SUMMARY = "## Decisions\n- none\n\n## Exact identifiers\n- none\n"


def kind(call: LLMCall) -> str:
    """Which job a model call was for."""
    last = call.messages[-1].content if call.messages else ""
    if last.startswith("[memdir: memory flush"):
        return "flush"
    if last.startswith("<transcript>"):
        return "compact"
    if last.startswith("<conversation>"):
        return "slug" if "file name" in (call.system or "") else "extract"
    return "chat"


def model(messages: Sequence[Message]) -> str:
    last = messages[-1].content
    if last.startswith("[memdir: memory flush"):
        return "NO_REPLY"
    if last.startswith("<transcript>"):
        return SUMMARY
    if last.startswith("<conversation>"):
        return '{"items": []}'
    return "An answer of a few words."


def kinds(llm: ScriptedLLM) -> list[str]:
    return [kind(call) for call in llm.calls]


@pytest.fixture
def llm() -> ScriptedLLM:
    return ScriptedLLM(responder=model)


@pytest.fixture
def agent(memory: Memory, llm: ScriptedLLM) -> ChatAgent:
    return ChatAgent(memory, llm, llm_config=SMALL)


def chat(agent: ChatAgent, turns: int, words: int = 60) -> None:
    for n in range(turns):
        out = agent.handle(f"turn {n}: " + "lorem ipsum dolor " * (words // 3))
        assert out.error is None, out.error


def test_a_tool_call_is_run_and_its_result_fed_back(agent, llm, memory):
    memory.write("The staging Redis listens on port 6380.")
    llm.enqueue('Let me check.\n{"tool": "memory_search", "args": {"query": "staging redis"}}')
    llm.enqueue("It listens on 6380.")

    out = agent.handle("Which port does staging redis use?")

    assert out.text == "It listens on 6380."
    assert out.tools and out.tools[0].startswith("memory_search: 1 result(s)")
    request = llm.calls[1].messages
    assert request[-2].role == "assistant" and '"tool"' in request[-2].content
    assert request[-1].role == "user"  # every provider accepts a tool result this way
    assert request[-1].content.startswith("[tool result] memory_search\n")
    assert "6380" in request[-1].content
    assert [m.role for m in agent.session.history] == ["user", "assistant", "tool", "assistant"]


def test_at_most_four_tool_calls_per_message(agent, llm):
    for _ in range(6):
        llm.enqueue('{"tool": "memory_search", "args": {"query": "anything at all"}}')

    out = agent.handle("Search forever please")

    assert len(out.tools) == 4 and len(llm.calls) == 5
    assert "more than 4 tool calls" in out.text
    assert "last tool call allowed" in llm.calls[4].messages[-1].content


def test_recall_goes_with_the_current_message_only(agent, llm, memory):
    memory.write("The deploy window is Tuesday 14:00.")
    agent.handle("When is the deploy window?")
    sent = llm.calls[0].messages[-1].content
    assert sent.startswith("<relevant-memories>") and "Tuesday 14:00" in sent
    assert sent.endswith("When is the deploy window?")
    assert agent.session.history[0].content == "When is the deploy window?"


def test_flush_runs_once_per_cycle_and_always_before_compaction(agent, llm):
    chat(agent, 60, words=150)

    sequence = [k for k in kinds(llm) if k != "chat"]
    compactions = agent.session.compactions
    assert compactions >= 3
    assert sequence.count("compact") == compactions
    # Every cycle: exactly one flush, then the compaction.
    cycles = "".join("F" if k == "flush" else "C" for k in sequence)
    assert cycles.startswith("FC" * compactions)
    assert cycles[2 * compactions :] in ("", "F")
    # The flush came when the request passed its threshold, not later.
    first_flush = kinds(llm).index("flush")
    chat_before = [c for c in llm.calls[:first_flush] if kind(c) == "chat"]
    assert chat_before  # some ordinary turns happened first


def test_compaction_keeps_the_last_three_user_turns(agent, llm):
    chat(agent, 30)
    assert agent.session.compactions >= 1
    users = [m.content for m in agent.session.history if m.role == "user"]
    assert users[-1].startswith("turn 29:")
    first = agent.context_messages()[0]
    assert first.role == "user" and first.content.startswith("<conversation-summary>")
    assert "Exact identifiers" in first.content
    assert "Exact identifiers" not in agent.system_prompt  # the summary has no system authority
    assert agent.context_tokens() <= agent.budget


def test_manual_compact_flushes_first_once_per_cycle(agent, llm):
    chat(agent, 6, words=9)

    agent.handle("/compact")
    assert [k for k in kinds(llm) if k != "chat"] == ["flush", "compact"]
    out = agent.handle("/compact")  # only 3 user turns left
    assert "nothing to compact" in out.notes[0]
    assert [k for k in kinds(llm) if k != "chat"] == ["flush", "compact"]

    chat(agent, 2, words=9)
    agent.handle("/compact")
    assert [k for k in kinds(llm) if k != "chat"] == ["flush", "compact", "flush", "compact"]


def test_new_flushes_archives_extracts_and_starts_over(agent, llm, workspace):
    first = agent.session.id
    chat(agent, 4, words=9)
    llm.enqueue("NO_REPLY")
    llm.enqueue("lorem-ipsum")
    llm.enqueue('{"items": [{"category": "todo", "text": "Finish the lorem report."}]}')

    out = agent.handle("/new")

    assert [k for k in kinds(llm) if k != "chat"] == ["flush", "slug", "extract"]
    assert any("archived 8 messages to memory/" in note for note in out.notes)
    archives = list((workspace / "memory").glob("*-lorem-ipsum.md"))
    assert len(archives) == 1 and "turn 3:" in archives[0].read_text()
    assert "- Finish the lorem report." in (workspace / "MEMORY.md").read_text()
    assert agent.session.id != first and agent.session.history == []
    assert agent.handle("/new").notes == []  # an empty session: no flush, archive, extraction


def test_new_after_a_threshold_flush_does_not_flush_again(agent, llm):
    while not agent.session.flushed_this_cycle:
        chat(agent, 1)
    calls = len(llm.calls)
    agent.handle("/new")
    assert "flush" not in [kind(c) for c in llm.calls[calls:]]


def test_compaction_failure_keeps_history_and_reports(agent, llm):
    def failing(messages):
        if messages[-1].content.startswith("<transcript>"):
            raise ProviderResponseError("HTTP 503: overloaded")
        return model(messages)

    llm.responder = failing
    notes: list[str] = []
    history_sizes = []
    for n in range(30):
        history_sizes.append(len(agent.session.history))
        out = agent.handle(f"turn {n}: " + "lorem ipsum dolor " * 20)
        notes.extend(out.notes)
        assert out.text  # the turn still got its answer
    assert agent.session.compactions == 0 and agent.session.summary is None
    assert history_sizes == sorted(history_sizes) and len(agent.session.history) == 60
    assert any("HTTP 503" in n and "history kept" in n for n in notes)


def test_model_failure_keeps_the_message(agent, llm):
    llm.enqueue(ProviderResponseError("HTTP 500"))
    out = agent.handle("hello there")
    assert "HTTP 500" in (out.error or "") and out.text == ""
    assert agent.session.history == [Message("user", "hello there")]


def test_remember_extracts_or_falls_back_to_the_daily_log(agent, llm, workspace, monkeypatch):
    monkeypatch.setenv("MEMDIR_NOW", "2026-11-30T10:00")
    llm.enqueue('{"items": [{"category": "preference", "text": "The user likes tea."}]}')
    out = agent.handle("/remember I like tea")
    assert out.notes == ["remembered in MEMORY.md#L7"]
    assert "- The user likes tea." in (workspace / "MEMORY.md").read_text()

    llm.enqueue('{"items": []}')
    out = agent.handle("/remember the wifi code is in the drawer")
    assert out.notes == ["remembered in memory/2026-11-30.md#L3"]
    assert agent.handle("/remember").error == "usage: /remember TEXT"


def test_capture_happens_and_is_reported(agent, workspace, monkeypatch):
    monkeypatch.setenv("MEMDIR_NOW", "2026-11-30T10:00")
    out = agent.handle("Remember that the staging database is on port 5433")
    assert out.notes[0] == "captured to memory/2026-11-30.md#L3"


def test_quit_extracts_once(agent, llm):
    chat(agent, 2, words=9)
    out = agent.handle("/quit")
    assert out.quit and kinds(llm).count("extract") == 1
    assert agent.end() == []
    assert kinds(llm).count("extract") == 1


def test_commands(agent, llm):
    status = agent.handle("/status").text
    assert "tokens" in status and "3,200" in status and "fake / scripted" in status
    assert "/remember TEXT" in agent.handle("/help").text
    assert "unknown command /frobnicate" in (agent.handle("/frobnicate").error or "")
    agent.handle("//etc is a folder")
    assert agent.session.history[0].content == "/etc is a folder"
    assert agent.handle("   ").text == ""


def test_shared_session_prompt_has_no_memory_md(workspace, fake_embedder, llm):
    write(workspace, "MEMORY.md", "# Memory\n\n## Preferences\n- private: likes green tea\n")
    with Memory(workspace, embedder=fake_embedder, scope="shared") as shared:
        ChatAgent(shared, llm, llm_config=SMALL).handle("what does the owner like to drink")
    system = llm.calls[0].system or ""
    assert "green tea" not in system and "# MEMORY.md" not in system
    assert "green tea" not in llm.calls[0].messages[-1].content
