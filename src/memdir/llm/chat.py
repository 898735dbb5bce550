"""The chat protocol of the agent: native tool calling and streamed replies.

:class:`~memdir.llm.base.LLM` (``complete(messages) -> str``) is all the memory lifecycle
needs (flush, compaction, extraction, archive slugs). The chat agent wants more, and a
provider that can do more implements :class:`ChatLLM` as well:

- :meth:`ChatLLM.chat` sends the conversation with tool definitions (:class:`ToolDefinition`)
  in the provider's own ``tools`` shape and returns a :class:`ChatReply`: the text and the
  :class:`~memdir.llm.base.ToolCall` s the model asked for (several at once when it calls tools
  in parallel).
- :meth:`ChatLLM.stream` does the same while the reply is being written: it yields
  :class:`TextDelta` as text arrives, :class:`ToolCallStart` when a tool call begins, and ends
  with one :class:`ReplyDone` holding the whole reply. Closing the iterator early (Ctrl-C)
  closes the connection.

A provider whose server refuses tool definitions raises :class:`~memdir.errors.ToolsUnsupported`
(and the agent falls back to its text protocol). An LLM that implements only ``complete`` still
works with the agent, through that text protocol.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from memdir.errors import ProviderResponseError, ToolsUnsupported
from memdir.llm.base import LLM, Message, ToolCall

#: Stop reasons that mean the reply was cut by the token limit (OpenAI's, then Anthropic's).
TRUNCATED_STOP_REASONS = frozenset({"length", "max_tokens"})
#: HTTP statuses that never mean "no tool support" (auth, missing endpoint, rate limits,
#: gateways): an error with one of them is reported as it is.
_NOT_A_TOOLS_REFUSAL = frozenset({401, 403, 404, 408, 429, 502, 503, 504})


class ToolDefinition(Protocol):
    """A tool the model may call: what each provider's ``tools`` list is built from."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def input_schema(self) -> Mapping[str, Any]:
        """The JSON Schema of the arguments (an ``object`` schema)."""
        ...


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens a request took, as the provider counted them (None: not reported)."""

    input_tokens: int | None = None
    output_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class ChatReply:
    """A model's reply: text, native tool calls, why it stopped and what it cost.

    Attributes:
        text: the text of the reply (may be empty when it only calls tools).
        tool_calls: the tool calls, in the order the model wrote them.
        stop_reason: the provider's own stop reason (``stop``, ``tool_calls``, ``end_turn``,
            ``tool_use``, ``length``, ``max_tokens`` …), None when not reported.
        usage: the provider's token counts, when it reported them.
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: str | None = None
    usage: Usage | None = None

    @property
    def truncated(self) -> bool:
        """The reply was cut short by the output token limit."""
        return self.stop_reason in TRUNCATED_STOP_REASONS

    def message(self) -> Message:
        """The reply as the assistant message that goes into the history."""
        return Message("assistant", self.text, tool_calls=self.tool_calls)


@dataclass(frozen=True, slots=True)
class TextDelta:
    """The next piece of the reply's text."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStart:
    """The model began a tool call (its arguments are still being written)."""

    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ReplyDone:
    """The stream is over; ``reply`` is the whole reply."""

    reply: ChatReply


ChatEvent = TextDelta | ToolCallStart | ReplyDone


@runtime_checkable
class ChatLLM(LLM, Protocol):
    """An :class:`~memdir.llm.base.LLM` with native tool calling and streaming."""

    def chat(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolDefinition] = (),
        max_tokens: int | None = None,
        timeout: float | None = None,
    ) -> ChatReply:
        """Return the model's reply to ``messages``, tool calls included.

        Args:
            messages: the conversation; assistant messages may carry ``tool_calls`` and
                ``tool`` messages with a ``tool_call_id`` carry their results.
            system: the system prompt.
            tools: the tools the model may call; empty sends no tools.
            max_tokens: most tokens the reply may have; None means the provider's setting.
            timeout: seconds allowed for this call; None means the provider's setting.

        Raises:
            ToolsUnsupported: the server refused the tool definitions.
            ProviderUnavailable: the provider cannot be reached or used here.
            ProviderResponseError: the provider failed or answered something unusable.
        """
        ...

    def stream(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolDefinition] = (),
        max_tokens: int | None = None,
        timeout: float | None = None,
    ) -> Iterator[ChatEvent]:
        """Like :meth:`chat`, yielding the reply as it is written; the last event is a
        :class:`ReplyDone`. Errors are raised from the iteration."""
        ...


def final_reply(events: Iterable[ChatEvent]) -> ChatReply:
    """Drive a stream to its end and return the reply of its :class:`ReplyDone`.

    Raises:
        ProviderResponseError: the stream ended without a :class:`ReplyDone`.
    """
    for event in events:
        if isinstance(event, ReplyDone):
            return event.reply
    raise ProviderResponseError("the reply stream ended before the reply was complete")


def tools_json(tools: Sequence[ToolDefinition]) -> str:
    """The tool definitions as compact JSON text, to count the room they take in a request."""
    if not tools:
        return ""
    return json.dumps(
        [
            {"name": t.name, "description": t.description, "parameters": dict(t.input_schema)}
            for t in tools
        ],
        ensure_ascii=False,
        separators=(",", ":"),
    )


def arguments_json(value: Any) -> str:
    """A tool call's arguments as JSON text: a string is kept as written (even if it is not
    valid JSON), anything else is serialised; None means ``{}``."""
    if isinstance(value, str):
        return value
    if value is None:
        return "{}"
    return json.dumps(value, ensure_ascii=False)


def check_tools_refusal(error: ProviderResponseError, tools: Sequence[ToolDefinition]) -> None:
    """Raise :class:`~memdir.errors.ToolsUnsupported` from ``error`` when it answered a request
    that had ``tools`` and the server's words are about tools or functions.

    Servers say it in their own ways: Ollama answers HTTP 400 "<model> does not support tools",
    llama.cpp's server without ``--jinja`` HTTP 500 "tools param requires --jinja flag", vLLM
    without a tool parser HTTP 400 about ``--enable-auto-tool-choice``, a model without function
    calling HTTP 400 "… does not support Function Calling". The agent confirms a refusal with a
    second, minimal request before it remembers it (an error about one request's tool
    *history* reads much the same).
    """
    status = error.status
    if not tools or status is None or status < 400 or status in _NOT_A_TOOLS_REFUSAL:
        return
    words = server_words(error.detail)
    if "tool" in words.lower() or "function" in words.lower():
        raise ToolsUnsupported(str(error), status=status, detail=words) from error


def server_words(body: str) -> str:
    """The message inside an error body (``{"error": {"message": …}}``, ``{"message": …}``,
    ``{"error": "…"}``), or the body itself when it holds none."""
    try:
        data = json.loads(body)
    except ValueError:
        return body
    for _ in range(3):
        if not isinstance(data, dict):
            break
        inner = data.get("error", data.get("message"))
        if isinstance(inner, str):
            return inner
        data = inner
    return body
