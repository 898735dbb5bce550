"""How the chat agent calls tools with its model: natively, or through the text protocol.

Native tool calls are used when the model implements :class:`~memdir.llm.chat.ChatLLM`, unless
``--tools text`` says otherwise or (with ``auto``) its server refused tools before. A refusal
met during a turn (:class:`~memdir.errors.ToolsUnsupported`) is handled by :meth:`refused`:

- under ``--tools native`` it is an error (no fallback was asked for);
- when the refused request carried tool calls in its history, one minimal request with tools
  tells whether the server refuses tools as such or only that conversation (an error about a
  call left unanswered reads much the same);
- otherwise it is remembered (:mod:`memdir.llm.tool_support`) and the agent goes on with the
  text protocol, from this request on.

Under ``--tools native``, the first request that goes through forgets a remembered refusal.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from memdir.clock import now
from memdir.config.settings import SearchConfig
from memdir.errors import MemdirError, ToolsUnsupported
from memdir.llm.base import LLM, Message
from memdir.llm.chat import ChatLLM
from memdir.llm.tool_support import forget_refusal, refusal_for, remember_refusal
from memdir.tools import memory_tools

ToolMode = Literal["auto", "native", "text"]


@dataclass(frozen=True)
class Fallback:
    """What :meth:`ToolCalling.refused` decided: go on with the text protocol (``note`` says
    so), or stop the turn with ``error``."""

    note: str = ""
    error: str = ""


class ToolCalling:
    """The tool calling of one chat agent (see the module docstring).

    Args:
        llm: the chat model.
        setting: ``auto``, ``native`` or ``text``.
    """

    def __init__(self, llm: LLM, setting: ToolMode = "auto") -> None:
        self.llm = llm
        self.setting: ToolMode = setting
        #: Why tools go through the text protocol ("" while they are native).
        self.text_reason = self._initial_reason()
        self._forget = setting == "native" and refusal_for(llm) is not None

    @property
    def native(self) -> bool:
        """Tools are called natively."""
        return not self.text_reason

    def describe(self) -> str:
        """One line for ``/status``."""
        if self.native:
            return "native tool calls"
        return f"text protocol ({self.text_reason})"

    def refused(self, error: ToolsUnsupported, wire: Sequence[Message]) -> Fallback:
        """The server refused a request with tools (``wire`` its messages): decide."""
        if self.setting == "native":
            return Fallback(
                error=f"the server refused native tools, your message is kept: {error} (leave "
                "out --tools native to fall back to the text protocol)"
            )
        if any(m.tool_calls or m.tool_call_id for m in wire) and not self._refuses_tools():
            return Fallback(error=f"the model failed, your message is kept: {error}")
        reason = error.detail or str(error)
        self.text_reason = f"the server refused native tools: {reason}"
        note = (
            f"the server refused native tool calls ({' '.join(reason.split())[:120]}): using "
            "the text protocol"
        )
        try:
            remember_refusal(self.llm, reason, now=now())
        except MemdirError as exc:
            note += f" (not remembered: {exc})"
        else:
            note += ", remembered for this model (see `memdir status`)"
        return Fallback(note=note)

    def worked(self) -> None:
        """A request went through: under ``--tools native``, forget a remembered refusal."""
        if self._forget and self.native:
            self._forget = False
            with contextlib.suppress(MemdirError):
                forget_refusal(self.llm)

    def _refuses_tools(self) -> bool:
        """One minimal request with tools: does the server refuse them as such?"""
        if not isinstance(self.llm, ChatLLM):
            return False
        try:
            self.llm.chat(
                [Message("user", "ping")],
                tools=memory_tools(SearchConfig(), private=False),
                max_tokens=1,
            )
        except ToolsUnsupported:
            return True
        except MemdirError:
            return False
        return False

    def _initial_reason(self) -> str:
        if self.setting == "text":
            return "--tools text"
        if not isinstance(self.llm, ChatLLM):
            return f"the {self.llm.name} provider has no native tool calling"
        refusal = refusal_for(self.llm) if self.setting == "auto" else None
        if refusal is not None:
            return f"the server refused native tools on {refusal.since[:10]}: {refusal.reason}"
        return ""
