"""The history as sent to a model: native tool calls kept, or all written as text."""

from __future__ import annotations

from memdir.agent.wire import native_wire, text_wire
from memdir.llm import Message, ToolCall

CALLS = (
    ToolCall("c1", "memory_search", '{"query": "redis"}'),
    ToolCall("c2", "memory_get", "{not json"),
)
HISTORY = [
    Message("user", "redis?"),
    Message("assistant", "Looking.", tool_calls=CALLS),
    Message("tool", '{"results": []}', tool_call_id="c1"),
    Message("tool", '{"error": "bad"}', tool_call_id="c2"),
    Message("assistant", '{"tool": "memory_search", "args": {"query": "x"}}'),
    Message("tool", "[tool result] memory_search\n{}"),  # the text protocol's result
    Message("assistant", "Nothing."),
]


def test_native_wire_keeps_native_calls_and_sends_text_results_as_user_messages():
    wire = native_wire(HISTORY, "older turns")
    assert wire[0].role == "user" and "older turns" in wire[0].content
    assert wire[1:5] == HISTORY[:4]
    assert wire[6] == Message("user", "[tool result] memory_search\n{}")
    assert wire[7] == HISTORY[6]


def test_text_wire_writes_every_call_and_result_as_text():
    wire = text_wire(HISTORY)
    assert not any(m.tool_calls or m.tool_call_id or m.role == "tool" for m in wire)
    assert wire[1] == Message(
        "assistant",
        'Looking.\n{"tool": "memory_search", "args": {"query": "redis"}}\n'
        '{"tool": "memory_get", "args": "{not json"}',
    )
    assert wire[2] == Message("user", '[tool result] memory_search\n{"results": []}')
    assert wire[3] == Message("user", '[tool result] memory_get\n{"error": "bad"}')
    assert wire[5] == Message("user", "[tool result] memory_search\n{}")
