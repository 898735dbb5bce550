"""Anthropic's Messages API wire format: messages, tools, replies and streamed events.

- Tools go as ``{"name", "description", "input_schema"}``.
- An assistant turn that calls tools holds ``tool_use`` content blocks (``id``, ``name``,
  ``input`` as an object); the results go back in the next user turn as ``tool_result`` blocks
  (``tool_use_id``, ``content``), all of one round's results in that one turn, before any text.
- A streamed reply is a sequence of events: ``message_start`` (input usage),
  ``content_block_start`` (a ``text`` or ``tool_use`` block at an ``index``),
  ``content_block_delta`` (``text_delta`` text, or ``input_json_delta`` ``partial_json``: a
  piece of the tool input's JSON text), ``content_block_stop``, ``message_delta`` (the
  ``stop_reason`` and output usage) and ``message_stop``; ``ping`` may come at any time.

:class:`EventAssembler` keeps a tool call's input as the JSON *text* it received, so input that
does not parse reaches the tool runner (which tells the model) instead of failing the stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memdir.llm.base import Message, ToolCall
from memdir.llm.chat import (
    ChatEvent,
    ChatReply,
    TextDelta,
    ToolCallStart,
    ToolDefinition,
    Usage,
    arguments_json,
)

Content = str | list[dict[str, Any]]


def to_anthropic_messages(
    messages: Sequence[Message], system: str | None = None
) -> tuple[str, list[dict[str, Any]]]:
    """Map chat messages to the Messages API: ``(system text, alternating turns)``.

    ``system`` messages join the system prompt; consecutive messages of one role are merged
    (the API wants user and assistant turns to alternate): text to text with a blank line,
    otherwise as content blocks. A ``tool`` message without a ``tool_call_id`` (the text
    protocol's result) goes as user text marked as a tool result.

    Raises:
        ValueError: no user or assistant message is left to send.
    """
    system_parts = [system] if system else []
    wire: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            system_parts.append(message.content)
            continue
        role = "assistant" if message.role == "assistant" else "user"
        content = _content(message)
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"] = _merge(wire[-1]["content"], content)
        else:
            wire.append({"role": role, "content": content})
    if not wire:
        raise ValueError("an anthropic request needs at least one user or assistant message")
    return "\n\n".join(system_parts), wire


def anthropic_tools(tools: Sequence[ToolDefinition]) -> list[dict[str, Any]]:
    """The ``tools`` list of a Messages API request."""
    return [
        {"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)}
        for t in tools
    ]


def reply_from_blocks(blocks: Sequence[Any], stop_reason: Any, usage: Any) -> ChatReply:
    """A :class:`ChatReply` from a (not streamed) answer's content blocks (SDK objects)."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text" and isinstance(getattr(block, "text", None), str):
            texts.append(block.text)
        elif kind == "tool_use":
            calls.append(
                ToolCall(
                    str(getattr(block, "id", "") or f"toolu_{len(calls)}"),
                    str(getattr(block, "name", "") or ""),
                    arguments_json(getattr(block, "input", None)),
                )
            )
    return ChatReply(
        "".join(texts),
        tuple(calls),
        stop_reason if isinstance(stop_reason, str) else None,
        _usage(usage),
    )


@dataclass
class _Block:
    kind: str
    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)


@dataclass
class EventAssembler:
    """Builds a :class:`ChatReply` from streamed events, telling what is new in each."""

    _blocks: dict[int, _Block] = field(default_factory=dict)
    _reason: str | None = None
    _input_tokens: int | None = None
    _output_tokens: int | None = None

    def feed(self, event: Any) -> list[ChatEvent]:
        """Take one streamed event (an SDK object); return the text and tool-call starts."""
        kind = getattr(event, "type", None)
        if kind == "message_start":
            usage = _usage(getattr(getattr(event, "message", None), "usage", None))
            if usage is not None:
                self._input_tokens = usage.input_tokens
                self._output_tokens = usage.output_tokens
        elif kind == "content_block_start":
            return self._start(getattr(event, "index", len(self._blocks)), event.content_block)
        elif kind == "content_block_delta":
            return self._delta(getattr(event, "index", 0), event.delta)
        elif kind == "message_delta":
            reason = getattr(getattr(event, "delta", None), "stop_reason", None)
            self._reason = reason if isinstance(reason, str) else self._reason
            usage = _usage(getattr(event, "usage", None))
            if usage is not None:
                # Counts in message_delta are totals so far: they replace, never add.
                self._input_tokens = usage.input_tokens or self._input_tokens
                self._output_tokens = usage.output_tokens or self._output_tokens
        return []

    def reply(self) -> ChatReply:
        """The reply so far (the whole reply once the stream has ended)."""
        ordered = [self._blocks[i] for i in sorted(self._blocks)]
        text = "".join("".join(b.parts) for b in ordered if b.kind == "text")
        calls = tuple(
            ToolCall(b.id, b.name, "".join(b.parts) or "{}")
            for b in ordered
            if b.kind == "tool_use"
        )
        usage = (
            Usage(self._input_tokens, self._output_tokens)
            if self._input_tokens is not None or self._output_tokens is not None
            else None
        )
        return ChatReply(text, calls, self._reason, usage)

    def _start(self, index: int, block: Any) -> list[ChatEvent]:
        kind = str(getattr(block, "type", ""))
        if kind == "tool_use":
            found = self._blocks[index] = _Block(
                kind,
                str(getattr(block, "id", "") or f"toolu_{index}"),
                str(getattr(block, "name", "") or ""),
            )
            start = getattr(block, "input", None)
            if start:  # the input is normally {} here and arrives as input_json_delta
                found.parts.append(arguments_json(start))
            return [ToolCallStart(found.id, found.name)]
        self._blocks[index] = _Block(kind)
        text = getattr(block, "text", None) if kind == "text" else None
        if isinstance(text, str) and text:
            self._blocks[index].parts.append(text)
            return [TextDelta(text)]
        return []

    def _delta(self, index: int, delta: Any) -> list[ChatEvent]:
        block = self._blocks.get(index)
        kind = getattr(delta, "type", None)
        if kind == "text_delta" and isinstance(getattr(delta, "text", None), str):
            if block is None:
                block = self._blocks[index] = _Block("text")
            block.parts.append(delta.text)
            return [TextDelta(delta.text)] if delta.text else []
        if kind == "input_json_delta" and block is not None and block.kind == "tool_use":
            partial = getattr(delta, "partial_json", "")
            block.parts.append(partial if isinstance(partial, str) else "")
        return []


def _content(message: Message) -> Content:
    if message.role == "tool" and message.tool_call_id:
        return [
            {"type": "tool_result", "tool_use_id": message.tool_call_id, "content": message.content}
        ]
    if message.role == "tool":
        return f"[tool result]\n{message.content}"
    if not message.tool_calls:
        return message.content
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call)})
    return blocks


def _input(call: ToolCall) -> dict[str, Any]:
    """The call's input as an object; arguments that never parsed go back as ``{}`` (the tool
    result already told the model what was wrong with them)."""
    try:
        return call.parsed_arguments()
    except ValueError:
        return {}


def _merge(first: Content, second: Content) -> Content:
    if isinstance(first, str) and isinstance(second, str):
        return f"{first}\n\n{second}"
    return _blocks(first) + _blocks(second)


def _blocks(content: Content) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content)


def _usage(usage: Any) -> Usage | None:
    if usage is None:
        return None
    given = getattr(usage, "input_tokens", None), getattr(usage, "output_tokens", None)
    numbers = [n if isinstance(n, int) else None for n in given]
    return Usage(numbers[0], numbers[1]) if any(n is not None for n in numbers) else None
