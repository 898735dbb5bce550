"""The session history as it is sent to a model: with native tool calls, or all as text.

The history keeps tool calls the way they happened: native calls as an assistant message with
``tool_calls`` followed by one ``tool`` message per call (``tool_call_id`` set); calls of the text
protocol as an assistant message holding the JSON request line followed by a ``tool`` message
without an id. Two renderings of it:

- :func:`native_wire` for a model called with native tools: native calls stay native (each
  provider maps them to its own shapes); text-protocol results travel as user messages.
- :func:`text_wire` for every request without tools — the memory flush, the text protocol
  after a server refused tools, any LLM without native tool calling: a native call becomes the
  text protocol's request line and its result a ``[tool result]`` user message, which every
  provider accepts (Anthropic refuses ``tool_use`` blocks in a request that defines no tools).

Both put the compaction summary first when there is one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from memdir.agent.context import summary_message
from memdir.agent.tools import TOOL_RESULT_PREFIX
from memdir.llm.base import Message, ToolCall


def native_wire(history: Sequence[Message], summary: str | None = None) -> list[Message]:
    """``history`` for a request with native tools (see the module docstring)."""
    wire = [summary_message(summary)] if summary else []
    for message in history:
        if message.role == "tool" and not message.tool_call_id:
            wire.append(Message("user", message.content))
        else:
            wire.append(message)
    return wire


def text_wire(history: Sequence[Message], summary: str | None = None) -> list[Message]:
    """``history`` with every tool call and result as plain text (see the module docstring)."""
    wire = [summary_message(summary)] if summary else []
    names: dict[str, str] = {}
    for message in history:
        if message.tool_calls:
            names.update((call.id, call.name) for call in message.tool_calls)
            lines = [message.content.strip()] if message.content.strip() else []
            lines += [request_line(call) for call in message.tool_calls]
            wire.append(Message("assistant", "\n".join(lines)))
        elif message.role == "tool" and message.tool_call_id:
            name = names.get(message.tool_call_id, "tool")
            wire.append(Message("user", f"{TOOL_RESULT_PREFIX} {name}\n{message.content}"))
        elif message.role == "tool":
            wire.append(Message("user", message.content))
        else:
            wire.append(message)
    return wire


def request_line(call: ToolCall) -> str:
    """A native tool call written as the text protocol's request line."""
    try:
        args: object = call.parsed_arguments()
    except ValueError:
        args = call.arguments  # kept as the model wrote it
    return json.dumps({"tool": call.name, "args": args}, ensure_ascii=False)
