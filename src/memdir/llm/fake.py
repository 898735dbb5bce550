"""A scripted LLM for tests: replies come from a queue, every call is recorded.

Shipped in the package (like ``httpx.MockTransport``) so users can test their own code against
memdir's lifecycle without a model or a network::

    llm = ScriptedLLM()
    llm.enqueue("## Decisions\\n- use port 6380")
    llm.enqueue(ProviderResponseError("overloaded"))   # the next call raises this
    ...
    system, messages = llm.history[0]
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memdir.llm.base import Message

Responder = Callable[[Sequence[Message]], str]


@dataclass(frozen=True)
class LLMCall:
    """One call a :class:`ScriptedLLM` received."""

    system: str | None
    messages: tuple[Message, ...]
    max_tokens: int | None
    timeout: float | None


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
    """

    name = "fake"

    def __init__(
        self,
        replies: Sequence[str | BaseException] = (),
        *,
        default: str = "",
        strict: bool = False,
        responder: Responder | None = None,
        model: str = "scripted",
    ) -> None:
        self.model = model
        self.default = default
        self.strict = strict
        self.responder = responder
        self.calls: list[LLMCall] = []
        self._queue: deque[str | BaseException] = deque()
        self._lock = threading.Lock()
        for reply in replies:
            self.enqueue(reply)

    def enqueue(self, reply: str | BaseException) -> None:
        """Queue the next reply; an exception is raised by the call that takes it."""
        if not isinstance(reply, str | BaseException):
            raise TypeError(
                f"a scripted reply is a str or an exception, not {type(reply).__name__}"
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
        """Record the call and return (or raise) the next scripted reply."""
        with self._lock:
            self.calls.append(LLMCall(system, tuple(messages), max_tokens, timeout))
            reply = self._queue.popleft() if self._queue else None
        if isinstance(reply, BaseException):
            raise reply
        if reply is not None:
            return reply
        if self.responder is not None:
            return self.responder(messages)
        if self.strict:
            last = messages[-1].content[:80] if messages else ""
            raise AssertionError(
                f"ScriptedLLM(strict=True) was called with no reply queued (last message: {last!r})"
            )
        return self.default

    def __repr__(self) -> str:
        return f"ScriptedLLM(model={self.model!r}, pending={self.pending}, calls={len(self.calls)})"
