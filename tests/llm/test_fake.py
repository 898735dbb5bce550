"""The scripted LLM shipped for tests."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

import memdir
from memdir.errors import ProviderResponseError, ToolsUnsupported
from memdir.llm import (
    LLM,
    ChatLLM,
    ChatReply,
    Message,
    ReplyDone,
    ScriptedLLM,
    TextDelta,
    ToolCall,
    ToolCallStart,
)

HI = [Message("user", "hi")]


def test_replies_come_in_order_and_calls_are_recorded():
    llm = ScriptedLLM(["first"])
    llm.enqueue("second")

    assert llm.complete(HI, system="sys one") == "first"
    assert llm.complete([Message("user", "again")], max_tokens=5, timeout=15) == "second"

    assert llm.history == [("sys one", HI), (None, [Message("user", "again")])]
    assert llm.calls[1].max_tokens == 5
    assert llm.calls[1].timeout == 15
    assert llm.pending == 0


def test_default_reply_when_the_queue_is_empty():
    assert ScriptedLLM().complete(HI) == ""
    assert ScriptedLLM(default="NO_REPLY").complete(HI) == "NO_REPLY"


def test_strict_fails_loudly_when_nothing_is_queued():
    llm = ScriptedLLM(strict=True)
    llm.enqueue("only one")
    assert llm.complete(HI) == "only one"

    with pytest.raises(AssertionError, match="no reply queued"):
        llm.complete([Message("user", "one more")])
    assert len(llm.history) == 2


def test_a_queued_exception_is_raised_once():
    llm = ScriptedLLM()
    llm.enqueue(ProviderResponseError("overloaded"))
    llm.enqueue("recovered")

    with pytest.raises(ProviderResponseError, match="overloaded"):
        llm.complete(HI)
    assert llm.complete(HI) == "recovered"
    assert len(llm.history) == 2


def test_responder_answers_after_the_queue():
    llm = ScriptedLLM(["queued"], responder=lambda messages: messages[-1].content.upper())

    assert llm.complete(HI) == "queued"
    assert llm.complete([Message("user", "shout")]) == "SHOUT"


def test_only_text_or_exceptions_can_be_queued():
    with pytest.raises(TypeError):
        ScriptedLLM().enqueue(42)  # type: ignore[arg-type]


def test_history_is_a_copy_of_what_was_sent():
    llm = ScriptedLLM()
    conversation = [Message("user", "a")]
    llm.complete(conversation)
    conversation.append(Message("assistant", "b"))

    assert llm.history == [(None, [Message("user", "a")])]


def test_it_is_an_llm_and_exported_from_the_package():
    llm = memdir.ScriptedLLM(model="tiny")
    assert isinstance(llm, memdir.LLM)
    assert isinstance(llm, LLM)
    assert (llm.name, llm.model) == ("fake", "tiny")
    assert "tiny" in repr(llm)


def test_message_checks_its_role_and_content():
    with pytest.raises(ValueError, match="role"):
        Message("robot", "hi")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Message("user", None)  # type: ignore[arg-type]
    assert Message("tool", "42 passed").role == "tool"


# --- the chat protocol: tool calls and streaming --------------------------------------------

CALL = ToolCall("c1", "memory_search", '{"query": "redis"}')


def test_it_speaks_the_chat_protocol_too():
    llm = ScriptedLLM([ChatReply("Looking.", (CALL,)), "plain text"])
    assert isinstance(llm, ChatLLM)

    first = llm.chat(HI, system="s", tools=[_Tool("memory_search")])
    second = llm.chat(HI)

    assert first.tool_calls == (CALL,) and first.text == "Looking."
    assert second == ChatReply("plain text", stop_reason="stop")
    assert llm.calls[0].tools == ("memory_search",) and llm.calls[1].tools == ()


def test_a_stream_yields_the_reply_word_by_word():
    llm = ScriptedLLM([ChatReply("Two words", (CALL,))])
    events = list(llm.stream(HI))
    assert events == [
        TextDelta("Two "),
        TextDelta("words"),
        ToolCallStart("c1", "memory_search"),
        ReplyDone(ChatReply("Two words", (CALL,))),
    ]
    assert llm.calls[0].streamed


def test_a_scripted_stream_can_be_cut_by_an_exception():
    llm = ScriptedLLM([["Half ", "a rep", KeyboardInterrupt()], ["a", CALL]])
    seen: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        for event in llm.stream(HI):
            seen.append(event.text)
    assert seen == ["Half ", "a rep"]
    assert llm.chat(HI) == ChatReply("a", (CALL,), "tool_calls")


def test_a_server_without_tools_is_played_on_request():
    llm = ScriptedLLM(["fine"], native_tools=False)
    with pytest.raises(ToolsUnsupported):
        llm.chat(HI, tools=[_Tool("memory_search")])
    assert llm.chat(HI).text == "fine"  # without tools it answers
    assert len(llm.calls) == 2


def test_complete_returns_the_text_of_any_script():
    llm = ScriptedLLM([ChatReply("text only", (CALL,)), ["a", "b"]])
    assert llm.complete(HI) == "text only"
    assert llm.complete(HI) == "ab"


def test_a_stream_script_holds_only_stream_items():
    with pytest.raises(TypeError, match="stream"):
        ScriptedLLM().enqueue(["ok", 3])  # type: ignore[list-item]


def test_tool_calls_belong_to_assistant_messages_and_results_to_tool_messages():
    with pytest.raises(ValueError, match="assistant"):
        Message("user", "x", tool_calls=(CALL,))
    with pytest.raises(ValueError, match="tool message"):
        Message("assistant", "x", tool_call_id="c1")
    assert Message("tool", "{}", tool_call_id="c1").tool_call_id == "c1"


@dataclass(frozen=True)
class _Tool:
    name: str
    description: str = ""
    input_schema: dict = field(default_factory=dict)
