"""Native tool calling and streaming through the OpenAI-compatible client, against a real HTTP
server on 127.0.0.1 speaking chat completions (JSON and server-sent events)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from memdir.errors import ProviderResponseError, ToolsUnsupported
from memdir.llm import ChatLLM, Message, ToolCall
from memdir.llm.chat import ReplyDone, TextDelta, ToolCallStart, final_reply
from memdir.llm.openai import OpenAIChatLLM
from tests.http_server import EventStream
from tests.llm.conftest import openai_chunk, openai_reply, openai_stream, openai_text_stream


@dataclass(frozen=True)
class Tool:
    name: str
    description: str = "a tool"
    input_schema: dict[str, Any] = field(
        default_factory=lambda: {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        }
    )


TOOLS = (Tool("memory_search"), Tool("memory_get"))
ASK = [Message("user", "What port does redis use?")]


def model(server, sleeps, **kwargs) -> OpenAIChatLLM:
    kwargs.setdefault("max_retries", 1)
    return OpenAIChatLLM(server.url, "m", timeout=5.0, sleep=sleeps, **kwargs)


def call_chunk(index: int, *, id: str = "", name: str = "", arguments: str | None = None):
    fragment: dict[str, Any] = {"index": index}
    if id:
        fragment.update(id=id, type="function")
    function: dict[str, Any] = {}
    if name:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    fragment["function"] = function
    return openai_chunk({"tool_calls": [fragment]})


def test_it_is_a_chat_llm(chat_server, sleeps):
    assert isinstance(model(chat_server, sleeps), ChatLLM)


def test_tools_and_tool_messages_go_in_openai_shapes(chat_server, sleeps):
    answer = openai_reply("")
    answer["choices"][0]["message"] = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "memory_get", "arguments": '{"query": "MEMORY.md"}'},
            }
        ],
    }
    answer["choices"][0]["finish_reason"] = "tool_calls"
    chat_server.enqueue(200, answer)
    history = [
        *ASK,
        Message(
            "assistant",
            "",
            tool_calls=(ToolCall("call_1", "memory_search", '{"query": "redis"}'),),
        ),
        Message("tool", '{"results": []}', tool_call_id="call_1"),
        Message("tool", "[tool result] memory_search\n{}"),  # the text protocol's result
    ]

    reply = model(chat_server, sleeps).chat(history, system="sys", tools=TOOLS)

    assert reply.tool_calls == (ToolCall("call_a", "memory_get", '{"query": "MEMORY.md"}'),)
    assert reply.text == "" and reply.stop_reason == "tool_calls"
    sent = chat_server.requests[0].json
    assert sent["tools"][0] == {
        "type": "function",
        "function": {
            "name": "memory_search",
            "description": "a tool",
            "parameters": TOOLS[0].input_schema,
        },
    }
    assert sent["messages"][2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "memory_search", "arguments": '{"query": "redis"}'},
            }
        ],
    }
    assert sent["messages"][3] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": '{"results": []}',
    }
    assert sent["messages"][4]["role"] == "user"
    assert "stream" not in sent


def test_arguments_sent_as_an_object_are_kept_as_json_text(chat_server, sleeps):
    answer = openai_reply("")
    answer["choices"][0]["message"]["tool_calls"] = [
        {"function": {"name": "memory_search", "arguments": {"query": "redis"}}}
    ]
    chat_server.enqueue(200, answer)
    [call] = model(chat_server, sleeps).chat(ASK, tools=TOOLS).tool_calls
    assert call.id == "call_0"  # none given: one is made up
    assert call.parsed_arguments() == {"query": "redis"}


def test_a_streamed_reply_arrives_piece_by_piece(chat_server, sleeps):
    chat_server.enqueue(200, openai_text_stream("Redis ", "listens on ", "6380."))

    events = list(model(chat_server, sleeps).stream(ASK, system="sys"))

    assert [e.text for e in events if isinstance(e, TextDelta)] == [
        "Redis ",
        "listens on ",
        "6380.",
    ]
    assert isinstance(events[-1], ReplyDone)
    assert events[-1].reply.text == "Redis listens on 6380."
    assert events[-1].reply.stop_reason == "stop"
    sent = chat_server.requests[0].json
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}


def test_streamed_parallel_tool_calls_with_split_arguments(chat_server, sleeps):
    chat_server.enqueue(
        200,
        openai_stream(
            openai_chunk({"role": "assistant", "content": "Checking both. "}),
            call_chunk(0, id="call_1", name="memory_search", arguments=""),
            call_chunk(0, arguments='{"qu'),
            call_chunk(0, arguments='ery": "red'),
            call_chunk(1, id="call_2", name="memory_get", arguments='{"query"'),
            call_chunk(0, arguments='is port"}'),
            call_chunk(1, arguments=': "MEMORY.md"}'),
            openai_chunk({}, "tool_calls"),
            usage=(120, 30),
        ),
    )

    events = list(model(chat_server, sleeps).stream(ASK, tools=TOOLS))

    starts = [e for e in events if isinstance(e, ToolCallStart)]
    assert starts == [
        ToolCallStart("call_1", "memory_search"),
        ToolCallStart("call_2", "memory_get"),
    ]
    reply = final_reply(events)
    assert reply.text == "Checking both. "
    assert [c.parsed_arguments() for c in reply.tool_calls] == [
        {"query": "redis port"},
        {"query": "MEMORY.md"},
    ]
    assert reply.stop_reason == "tool_calls"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (120, 30)
    assert chat_server.requests[0].json["tools"][1]["function"]["name"] == "memory_get"


def test_parallel_calls_that_reuse_index_0_are_told_apart_by_id(chat_server, sleeps):
    # Ollama sends each whole call at index 0, with its own id.
    chat_server.enqueue(
        200,
        openai_stream(
            call_chunk(0, id="a", name="memory_search", arguments='{"query": "one"}'),
            call_chunk(0, id="b", name="memory_search", arguments='{"query": "two"}'),
            openai_chunk({}, "tool_calls"),
        ),
    )
    reply = final_reply(model(chat_server, sleeps).stream(ASK, tools=TOOLS))
    assert [(c.id, c.parsed_arguments()["query"]) for c in reply.tool_calls] == [
        ("a", "one"),
        ("b", "two"),
    ]


def test_bad_argument_json_is_kept_for_the_tool_runner_to_report(chat_server, sleeps):
    chat_server.enqueue(
        200,
        openai_stream(
            call_chunk(0, id="c", name="memory_search", arguments='{"query": "unclosed'),
            openai_chunk({}, "tool_calls"),
        ),
    )
    [call] = final_reply(model(chat_server, sleeps).stream(ASK, tools=TOOLS)).tool_calls
    assert call.arguments == '{"query": "unclosed'
    with pytest.raises(ValueError, match="not valid JSON"):
        call.parsed_arguments()


def test_a_server_that_ignores_stream_true_still_works(chat_server, sleeps):
    chat_server.enqueue(200, openai_reply("whole at once"))
    events = list(model(chat_server, sleeps).stream(ASK))
    assert events == [TextDelta("whole at once"), ReplyDone(final_reply(events))]
    assert final_reply(events).text == "whole at once"


@pytest.mark.parametrize(
    ("status", "words"),
    [
        (400, "registry.ollama.ai/library/gemma:2b does not support tools"),
        (500, "tools param requires --jinja flag"),
        (400, '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser'),
        (400, "deepseek-reasoner does not support Function Calling"),
    ],
)
def test_servers_that_refuse_tools(chat_server, sleeps, status, words):
    chat_server.enqueue(status, {"error": {"message": words}})
    with pytest.raises(ToolsUnsupported, match="HTTP"):
        model(chat_server, sleeps).chat(ASK, tools=TOOLS)
    chat_server.enqueue(status, {"error": {"message": words}})
    with pytest.raises(ToolsUnsupported):
        list(model(chat_server, sleeps).stream(ASK, tools=TOOLS))


def test_other_errors_are_not_taken_for_a_refusal_of_tools(chat_server, sleeps):
    chat_server.enqueue(400, {"error": {"message": "context length exceeded"}})
    with pytest.raises(ProviderResponseError) as info:
        model(chat_server, sleeps).chat(ASK, tools=TOOLS)
    assert not isinstance(info.value, ToolsUnsupported)
    chat_server.enqueue(401, {"error": {"message": "invalid key for tools"}})
    with pytest.raises(ProviderResponseError) as info:
        model(chat_server, sleeps).chat(ASK, tools=TOOLS)
    assert not isinstance(info.value, ToolsUnsupported)
    # Without tools in the request, tool words in an error mean nothing either.
    chat_server.enqueue(400, {"error": {"message": "does not support tools"}})
    with pytest.raises(ProviderResponseError) as info:
        model(chat_server, sleeps).chat(ASK)
    assert not isinstance(info.value, ToolsUnsupported)


def test_a_server_without_stream_options_is_asked_again_without_them(chat_server, sleeps):
    chat_server.enqueue(400, {"error": {"message": "unknown field stream_options"}})
    chat_server.enqueue(200, openai_text_stream("ok"))
    chat_server.enqueue(200, openai_text_stream("again"))
    llm = model(chat_server, sleeps)

    assert final_reply(llm.stream(ASK)).text == "ok"
    assert final_reply(llm.stream(ASK)).text == "again"

    first, retried, later = (r.json for r in chat_server.requests)
    assert "stream_options" in first
    assert "stream_options" not in retried and "stream_options" not in later


def test_an_error_reported_mid_stream(chat_server, sleeps):
    chat_server.enqueue(
        200,
        EventStream(
            [(None, openai_chunk({"content": "Hal"})), (None, {"error": {"message": "oom"}})]
        ),
    )
    with pytest.raises(ProviderResponseError, match="mid-reply: oom"):
        list(model(chat_server, sleeps).stream(ASK))


def test_a_stream_cut_short_is_an_error(chat_server, sleeps):
    chat_server.enqueue(200, EventStream([(None, openai_chunk({"content": "Hal"}))]))
    with pytest.raises(ProviderResponseError, match="cut off"):
        list(model(chat_server, sleeps).stream(ASK))


def test_a_chunk_that_is_not_json(chat_server, sleeps):
    chat_server.enqueue(200, EventStream([(None, "{not json")]))
    with pytest.raises(ProviderResponseError, match="cannot be read"):
        list(model(chat_server, sleeps).stream(ASK))


def test_a_server_error_before_the_stream_is_retried(chat_server, sleeps):
    chat_server.enqueue(503, {"error": {"message": "loading"}}, headers={"Retry-After": "0"})
    chat_server.enqueue(200, openai_text_stream("ready"))
    reply = final_reply(model(chat_server, sleeps, max_retries=2).stream(ASK))
    assert reply.text == "ready" and len(chat_server.requests) == 2
    assert json.dumps(chat_server.requests[0].json) == json.dumps(chat_server.requests[1].json)
