"""Native tool calling and streaming with Claude: block mapping always; the real anthropic SDK
against a real HTTP server on 127.0.0.1 (JSON and server-sent events) when installed."""

from __future__ import annotations

import pytest

from memdir.errors import ProviderResponseError, ToolsUnsupported
from memdir.llm import ChatLLM, Message, ToolCall
from memdir.llm.anthropic import AnthropicLLM
from memdir.llm.anthropic_wire import to_anthropic_messages
from memdir.llm.chat import ReplyDone, TextDelta, ToolCallStart, final_reply
from tests.llm.conftest import anthropic_reply, anthropic_stream
from tests.llm.test_openai_chat import ASK, TOOLS

KEY = "sk-ant-test-SECRET-1234567890"


def test_tool_calls_and_results_become_blocks():
    calls = (
        ToolCall("toolu_1", "memory_search", '{"query": "redis"}'),
        ToolCall("toolu_2", "memory_get", "{broken"),
    )
    messages = [
        *ASK,
        Message("assistant", "Looking.", tool_calls=calls),
        Message("tool", '{"results": []}', tool_call_id="toolu_1"),
        Message("tool", '{"error": "bad arguments"}', tool_call_id="toolu_2"),
        Message("assistant", "Nothing found."),
        Message("user", "ok"),
    ]

    _, wire = to_anthropic_messages(messages)

    assert wire[1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Looking."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "memory_search",
                "input": {"query": "redis"},
            },
            # arguments that never parsed go back as {}: the result told the model why
            {"type": "tool_use", "id": "toolu_2", "name": "memory_get", "input": {}},
        ],
    }
    # Both results of the round in one user turn.
    assert wire[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"results": []}'},
            {
                "type": "tool_result",
                "tool_use_id": "toolu_2",
                "content": '{"error": "bad arguments"}',
            },
        ],
    }
    assert wire[3:] == [
        {"role": "assistant", "content": "Nothing found."},
        {"role": "user", "content": "ok"},
    ]


def test_text_after_tool_results_joins_their_turn_as_a_block():
    messages = [
        *ASK,
        Message("assistant", "", tool_calls=(ToolCall("t", "memory_search", "{}"),)),
        Message("tool", "{}", tool_call_id="t"),
        Message("user", "and?"),
    ]
    _, wire = to_anthropic_messages(messages)
    assert wire[1]["content"] == [
        {"type": "tool_use", "id": "t", "name": "memory_search", "input": {}}
    ]
    assert wire[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t", "content": "{}"},
        {"type": "text", "text": "and?"},
    ]


# --- with the SDK, against a real server on 127.0.0.1 --------------------------------------


@pytest.fixture
def sdk():
    return pytest.importorskip("anthropic")


def claude(server) -> AnthropicLLM:
    return AnthropicLLM("claude-test", KEY, base_url=server.url, max_retries=1, timeout=5.0)


def test_it_is_a_chat_llm(sdk, chat_server):
    assert isinstance(claude(chat_server), ChatLLM)


def test_tools_are_sent_and_tool_use_is_read(sdk, chat_server):
    answer = anthropic_reply("Let me look.")
    answer["content"].append(
        {"type": "tool_use", "id": "toolu_9", "name": "memory_search", "input": {"query": "redis"}}
    )
    answer["stop_reason"] = "tool_use"
    chat_server.enqueue(200, answer)

    reply = claude(chat_server).chat(ASK, system="sys", tools=TOOLS)

    assert reply.text == "Let me look." and reply.stop_reason == "tool_use"
    [call] = reply.tool_calls
    assert (call.id, call.name, call.parsed_arguments()) == (
        "toolu_9",
        "memory_search",
        {"query": "redis"},
    )
    sent = chat_server.requests[0].json
    assert sent["tools"][0] == {
        "name": "memory_search",
        "description": "a tool",
        "input_schema": TOOLS[0].input_schema,
    }
    assert sent["system"] == "sys" and "stream" not in sent


def test_a_streamed_reply_with_text_and_parallel_tool_calls(sdk, chat_server):
    chat_server.enqueue(
        200,
        anthropic_stream(
            ("text", ["Checking ", "both."]),
            ("tool_use", ("toolu_1", "memory_search", ['{"que', 'ry": "redis', ' port"}'])),
            ("tool_use", ("toolu_2", "memory_get", ["", '{"query": ', '"MEMORY.md"}'])),
            stop="tool_use",
        ),
    )

    events = list(claude(chat_server).stream(ASK, tools=TOOLS))

    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Checking ", "both."]
    assert [e for e in events if isinstance(e, ToolCallStart)] == [
        ToolCallStart("toolu_1", "memory_search"),
        ToolCallStart("toolu_2", "memory_get"),
    ]
    assert isinstance(events[-1], ReplyDone)
    reply = events[-1].reply
    assert reply.text == "Checking both."
    assert [c.parsed_arguments() for c in reply.tool_calls] == [
        {"query": "redis port"},
        {"query": "MEMORY.md"},
    ]
    assert reply.stop_reason == "tool_use"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (25, 17)
    sent = chat_server.requests[0].json
    assert sent["stream"] is True and sent["tools"][1]["name"] == "memory_get"


def test_streamed_tool_input_that_is_not_json_does_not_break_the_stream(sdk, chat_server):
    chat_server.enqueue(
        200,
        anthropic_stream(
            ("tool_use", ("toolu_1", "memory_search", ['{"query": ', "oops"])), stop="tool_use"
        ),
    )
    [call] = final_reply(claude(chat_server).stream(ASK, tools=TOOLS)).tool_calls
    assert call.arguments == '{"query": oops'
    with pytest.raises(ValueError, match="not valid JSON"):
        call.parsed_arguments()


def test_a_refusal_of_tools(sdk, chat_server):
    body = {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "tools: not supported by this proxy"},
    }
    chat_server.enqueue(400, body)
    with pytest.raises(ToolsUnsupported):
        claude(chat_server).chat(ASK, tools=TOOLS)
    chat_server.enqueue(400, body)
    with pytest.raises(ToolsUnsupported):
        list(claude(chat_server).stream(ASK, tools=TOOLS))
    chat_server.enqueue(
        400,
        {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "prompt is too long"},
        },
    )
    with pytest.raises(ProviderResponseError) as info:
        claude(chat_server).chat(ASK, tools=TOOLS)
    assert not isinstance(info.value, ToolsUnsupported)


def test_an_error_event_mid_stream(sdk, chat_server):
    stream = anthropic_stream(("text", ["Hal"]))
    stream.events[4:] = [
        ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    ]
    chat_server.enqueue(200, stream)
    with pytest.raises(ProviderResponseError, match="Overloaded"):
        list(claude(chat_server).stream(ASK))
