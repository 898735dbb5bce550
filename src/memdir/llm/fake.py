"""A scripted LLM for tests: replies come from a queue, every call is recorded.

Shipped in the package (like ``httpx.MockTransport``) so users can test their own code against
memdir's lifecycle and chat agent without a model or a network::

    llm = ScriptedLLM()
    llm.enqueue("## Decisions\\n- use port 6380")
    llm.enqueue(ProviderResponseError("overloaded"))   # the next call raises this
    llm.enqueue(ChatReply("Let me look.", (ToolCall("c1", "memory_search", '{"query": "x"}'),)))
    llm.enqueue(["Half a rep", KeyboardInterrupt()])  # a stream cut by Ctrl-C
    ...
    system, messages = llm.history[0]

It speaks :class:`~memdir.llm.chat.ChatLLM` too: :meth:`ScriptedLLM.chat` returns the next
reply with its tool calls; :meth:`ScriptedLLM.stream` yields it word by word. A reply scripted
as a list is a stream written out item by item: a ``str`` is the next piece of text, a
:class:`~memdir.llm.base.ToolCall` a tool call, an exception is raised right there.
"""

from __future__ import annotations

import re
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from memdir.errors import ToolsUnsupported
from memdir.llm.base import Message, ToolCall
from memdir.llm.chat import (
    ChatEvent,
    ChatReply,
    ReplyDone,
    TextDelta,
    ToolCallStart,
    ToolDefinition,
)

StreamItem = str | ToolCall | BaseException
Scripted = str | ChatReply | BaseException | Sequence[StreamItem]
Responder = Callable[[Sequence[Message]], str | ChatReply]

_PIECES = re.compile(r"\S+\s*|\s+")


@dataclass(frozen=True)
class LLMCall:
    """One call a :class:`ScriptedLLM` received.

    Attributes:
        tools: names of the tools offered (``chat`` and ``stream`` only).
        streamed: the call was a :meth:`ScriptedLLM.stream`.
    """

    system: str | None
    messages: tuple[Message, ...]
    max_tokens: int | None
    timeout: float | None
    tools: tuple[str, ...] = ()
    streamed: bool = False


class ScriptedLLM:
    """An LLM whose replies a test scripts.

    Each call takes the next queued reply; a queued exception is raised instead. With the
    queue empty, ``responder(messages)`` answers if given, else ``default`` is returned, or,
    with ``strict=True``, the call fails with an ``AssertionError`` (not a ``MemdirError``, so
    code under test cannot swallow it as a provider failure).

    Args:
        replies: replies to queue at once, in order.
        default: the reply when nothing is queued and there is no responder.
        strict: fail a call that finds nothing queued and no responder.
        responder: computes a reply from the messages when nothing is queued.
        model: the model name to report.
        native_tools: False plays a server without tool calling: ``chat`` and ``stream``
            with tools raise :class:`~memdir.errors.ToolsUnsupported` (the call is recorded).
    """

    name = "fake"

    def __init__(
        self,
        replies: Sequence[Scripted] = (),
        *,
        default: str = "",
        strict: bool = False,
        responder: Responder | None = None,
        model: str = "scripted",
        native_tools: bool = True,
    ) -> None:
        self.model = model
        self.default = default
        self.strict = strict
        self.responder = responder
        self.native_tools = native_tools
        self.calls: list[LLMCall] = []
        self._queue: deque[Scripted] = deque()
        self._lock = threading.Lock()
        for reply in replies:
            self.enqueue(reply)

    def enqueue(self, reply: Scripted) -> None:
        """Queue the next reply; an exception is raised by the call that takes it."""
        if isinstance(reply, list | tuple):
            if not all(isinstance(item, str | ToolCall | BaseException) for item in reply):
                raise TypeError("a scripted stream holds str, ToolCall and exception items")
        elif not isinstance(reply, str | ChatReply | BaseException):
            raise TypeError(
                "a scripted reply is a str, a ChatReply, an exception or a list of stream "
                f"items, not {type(reply).__name__}"
            )
        with self._lock:
            self._queue.append(reply)

    @property
    def pending(self) -> int:
        """How many queued replies no call has taken yet."""
        with self._lock:
            return len(self._queue)

    @property
    def history(self) -> list[tuple[str | None, list[Message]]]:
        """``(system, messages)`` of every call, oldest first."""
        with self._lock:
            return [(call.system, list(call.messages)) for call in self.calls]

    def complete(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
    ) -> str:
        """Record the call and return (or raise) the next scripted reply's text."""
        reply = self._next(LLMCall(system, tuple(messages), max_tokens, timeout))
        return _assemble(reply).text

    def chat(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolDefinition] = (),
        max_tokens: int | None = None,
        timeout: float | None = None,
    ) -> ChatReply:
        """Record the call and return (or raise) the next scripted reply."""
        call = LLMCall(system, tuple(messages), max_tokens, timeout, _names(tools))
        return _assemble(self._next(call))

    def stream(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolDefinition] = (),
        max_tokens: int | None = None,
        timeout: float | None = None,
    ) -> Iterator[ChatEvent]:
        """Record the call and yield the next scripted reply piece by piece."""
        call = LLMCall(system, tuple(messages), max_tokens, timeout, _names(tools), True)
        reply = self._next(call)
        items: Sequence[StreamItem]
        if isinstance(reply, ChatReply):
            items = [*_PIECES.findall(reply.text), *reply.tool_calls]
        elif isinstance(reply, str):
            items = _PIECES.findall(reply)
        else:
            items = reply
        for item in items:
            if isinstance(item, BaseException):
                raise item
            if isinstance(item, ToolCall):
                yield ToolCallStart(item.id, item.name)
            elif item:
                yield TextDelta(item)
        done = reply if isinstance(reply, ChatReply) else _assemble(items)
        yield ReplyDone(done)

    def _next(self, call: LLMCall) -> str | ChatReply | Sequence[StreamItem]:
        with self._lock:
            self.calls.append(call)
            if call.tools and not self.native_tools:
                raise ToolsUnsupported(
                    "scripted server: HTTP 400: this model does not support tools",
                    status=400,
                    detail="this model does not support tools",
                )
            reply = self._queue.popleft() if self._queue else None
        if isinstance(reply, BaseException):
            raise reply
        if reply is not None:
            return reply
        if self.responder is not None:
            return self.responder(call.messages)
        if self.strict:
            last = call.messages[-1].content[:80] if call.messages else ""
            raise AssertionError(
                f"ScriptedLLM(strict=True) was called with no reply queued (last message: {last!r})"
            )
        return self.default

    def __repr__(self) -> str:
        return f"ScriptedLLM(model={self.model!r}, pending={self.pending}, calls={len(self.calls)})"


def _assemble(reply: str | ChatReply | Sequence[StreamItem]) -> ChatReply:
    """The whole reply a script stands for; a scripted stream's exception is raised."""
    if isinstance(reply, ChatReply):
        return reply
    if isinstance(reply, str):
        return ChatReply(reply, stop_reason="stop")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for item in reply:
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, ToolCall):
            calls.append(item)
        else:
            texts.append(item)
    return ChatReply("".join(texts), tuple(calls), "tool_calls" if calls else "stop")


def _names(tools: Sequence[ToolDefinition]) -> tuple[str, ...]:
    return tuple(tool.name for tool in tools)
