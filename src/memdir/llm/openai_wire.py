"""OpenAI's chat-completions wire format: messages, tools, replies and streamed chunks.

- Tools go as ``{"type": "function", "function": {"name", "description", "parameters"}}``.
- An assistant message that calls tools carries ``tool_calls: [{"id", "type": "function",
  "function": {"name", "arguments"}}]`` (``arguments`` is JSON *text*); each result follows as
  ``{"role": "tool", "tool_call_id": …, "content": …}``.
- A streamed reply arrives as ``data: {chunk}`` server-sent events ending with
  ``data: [DONE]``; each chunk's ``choices[0].delta`` holds the next ``content`` text and
  ``tool_calls`` fragments: the first fragment of a call has its ``index``, ``id`` and
  ``function.name``, later ones more ``function.arguments`` text for the same ``index``. The
  last chunk may hold only ``usage`` (``stream_options.include_usage``).

Servers differ at the edges, and :class:`StreamAssembler` takes them as they come: arguments
sent whole in one fragment or as an object instead of text (some Ollama versions), parallel
calls that all reuse index 0 and differ only by id, a missing id (one is made up), usage in any
chunk.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memdir.errors import ProviderResponseError
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


def openai_messages(messages: Sequence[Message], system: str | None = None) -> list[dict[str, Any]]:
    """``messages`` as chat-completions messages, after ``system`` if given.

    A ``tool`` message without a ``tool_call_id`` (the text protocol's result) goes as a user
    message, which every server accepts.
    """
    wire: list[dict[str, Any]] = []
    if system:
        wire.append({"role": "system", "content": system})
    for m in messages:
        if m.role == "tool" and m.tool_call_id:
            wire.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        elif m.role == "tool":
            wire.append({"role": "user", "content": m.content})
        elif m.tool_calls:
            wire.append(
                {
                    "role": "assistant",
                    # null rather than "" when there is no text: some servers refuse "".
                    "content": m.content or None,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": call.arguments},
                        }
                        for call in m.tool_calls
                    ],
                }
            )
        else:
            wire.append({"role": m.role, "content": m.content})
    return wire


def openai_tools(tools: Sequence[ToolDefinition]) -> list[dict[str, Any]]:
    """The ``tools`` list of a chat-completions request."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": dict(tool.input_schema),
            },
        }
        for tool in tools
    ]


def parse_completion(
    body: Any, where: str, scrub: Callable[[str], str] = lambda text: text
) -> ChatReply:
    """The reply in a (not streamed) chat completion.

    Raises:
        ProviderResponseError: the body is not a completion, or has neither text nor tool calls.
    """
    if not isinstance(body, dict):
        raise ProviderResponseError(f"{where}: the answer is not a JSON object")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        error = body.get("error")
        detail = f": {scrub(error_message(error))}" if error else ""
        raise ProviderResponseError(f"{where}: the answer has no choices{detail}")
    first = choices[0] if isinstance(choices[0], dict) else {}
    message = first.get("message")
    message = message if isinstance(message, dict) else {}
    text = content_text(message.get("content"))
    calls = tuple(
        _tool_call(raw, n)
        for n, raw in enumerate(message.get("tool_calls") or [])
        if isinstance(raw, dict)
    )
    reason = first.get("finish_reason")
    if text is None and not calls:
        because = f" (finish_reason {reason!r})" if reason else ""
        raise ProviderResponseError(f"{where}: the first choice has no text{because}")
    return ChatReply(text or "", calls, reason if isinstance(reason, str) else None, usage_of(body))


def _tool_call(raw: Mapping[str, Any], n: int) -> ToolCall:
    function = raw.get("function")
    function = function if isinstance(function, dict) else {}
    return ToolCall(
        str(raw.get("id") or f"call_{n}"),
        str(function.get("name") or ""),
        arguments_json(function.get("arguments")),
    )


def content_text(content: Any) -> str | None:
    """The text of a message's ``content``: a string, or text parts joined; None if neither."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        # Some servers answer with content parts: [{"type": "text", "text": "…"}, …].
        parts = [
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]
        if parts:
            return "".join(parts)
    return None


def usage_of(body: Mapping[str, Any]) -> Usage | None:
    """The ``usage`` of a completion or chunk, if it has one."""
    usage = body.get("usage")
    if not isinstance(usage, dict):
        return None
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    return Usage(
        prompt if isinstance(prompt, int) else None,
        completion if isinstance(completion, int) else None,
    )


def error_message(error: Any) -> str:
    """The words of an ``error`` member (an object with ``message``, or anything else)."""
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])[:200]
    return str(error)[:200]


@dataclass
class _PendingCall:
    id: str
    name: str
    parts: list[str] = field(default_factory=list)
    started: bool = False


@dataclass
class StreamAssembler:
    """Builds a :class:`ChatReply` from streamed chunks, telling what is new in each.

    Attributes:
        where: names the endpoint in error messages.
    """

    where: str
    _text: list[str] = field(default_factory=list)
    _calls: list[_PendingCall] = field(default_factory=list)
    #: raw fragment index → position in ``_calls`` of the call it currently feeds
    _slots: dict[int, int] = field(default_factory=dict)
    _reason: str | None = None
    _usage: Usage | None = None

    def feed(self, chunk: Any) -> list[ChatEvent]:
        """Take one chunk (decoded JSON); return the text and tool-call starts it brings.

        Raises:
            ProviderResponseError: the chunk is an error report, or not a chunk at all.
        """
        if not isinstance(chunk, dict):
            raise ProviderResponseError(f"{self.where}: a streamed chunk is not a JSON object")
        if chunk.get("error") and not chunk.get("choices"):
            raise ProviderResponseError(
                f"{self.where}: the server reported an error mid-reply: "
                f"{error_message(chunk['error'])}"
            )
        self._usage = usage_of(chunk) or self._usage
        events: list[ChatEvent] = []
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return events
        choice = choices[0]
        if isinstance(choice.get("finish_reason"), str):
            self._reason = choice["finish_reason"]
        # A server that ignored stream=true mid-way may send "message" instead of "delta".
        delta = choice.get("delta") or choice.get("message")
        if not isinstance(delta, dict):
            return events
        text = content_text(delta.get("content"))
        if text:
            self._text.append(text)
            events.append(TextDelta(text))
        for fragment in delta.get("tool_calls") or []:
            if isinstance(fragment, dict):
                events.extend(self._take_fragment(fragment))
        return events

    def reply(self) -> ChatReply:
        """The reply so far (the whole reply once the stream has ended)."""
        calls = tuple(
            ToolCall(c.id, c.name, "".join(c.parts) or "{}") for c in self._calls if c.name
        )
        return ChatReply("".join(self._text), calls, self._reason, self._usage)

    @property
    def text(self) -> str:
        """The text received so far."""
        return "".join(self._text)

    def _take_fragment(self, fragment: Mapping[str, Any]) -> list[ChatEvent]:
        index = fragment.get("index")
        index = index if isinstance(index, int) else len(self._calls)
        function = fragment.get("function")
        function = function if isinstance(function, dict) else {}
        call_id = str(fragment.get("id") or "")
        name = str(function.get("name") or "")
        slot = self._slots.get(index)
        current = self._calls[slot] if slot is not None else None
        if current is None or (call_id and call_id != current.id and (name or _closed(current))):
            # A new call: a new index, or (Ollama) a new id at an index already in use.
            current = _PendingCall(call_id or f"call_{len(self._calls)}", name)
            self._slots[index] = len(self._calls)
            self._calls.append(current)
        elif name and not current.name:
            current.name = name
        arguments = function.get("arguments")
        if arguments is not None:
            current.parts.append(arguments_json(arguments))
        if current.name and not current.started:
            current.started = True
            return [ToolCallStart(current.id, current.name)]
        return []


def _closed(call: _PendingCall) -> bool:
    """The call's arguments so far are a whole JSON value (so a new id starts a new call)."""
    try:
        json.loads("".join(call.parts))
    except ValueError:
        return False
    return True
