"""One model request inside a chat turn, and what a turn tells the screen while it runs.

- :class:`TurnListener` is told, as they happen, the reply's text (streamed piece by piece, or
  whole when the model is not streamed), each tool call and its result line, and lifecycle
  notes. ``memdir chat`` in a terminal draws from it; piped input uses :class:`QuietListener`
  and prints the finished :class:`Output`.
- :class:`ModelCaller` makes one request: streamed or not, with native tools or without,
  holding back a text-protocol request line so that it never reaches the screen, counting
  tokens, and turning Ctrl-C during a streamed reply into an :class:`Answer` marked
  ``interrupted`` that keeps the text shown so far.
- :func:`run_native_calls` runs one round of native tool calls (several when the model called
  tools in parallel) and returns the ``tool`` messages that answer them, one per call id; bad
  arguments and unknown tools get an error result, never an exception.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from memdir.agent.tools import (
    ToolRequest,
    describe_result,
    find_tool_request,
    run_tool,
    tool_content,
)
from memdir.errors import ProviderResponseError
from memdir.llm.base import LLM, Message, ToolCall, count_message_tokens, count_tokens
from memdir.llm.chat import (
    ChatLLM,
    ChatReply,
    ReplyDone,
    TextDelta,
    ToolCallStart,
    ToolDefinition,
    tools_json,
)
from memdir.memory.facade import Memory

#: Rounds of tool calls allowed per user message (a text-protocol request is one round).
MAX_TOOL_ROUNDS = 4
#: Tool calls run in one round; the model is told that the rest were not run.
MAX_CALLS_PER_ROUND = 8
#: Ends a reply that the user stopped, in the history and the transcript.
INTERRUPTED_MARK = "[interrupted by the user]"
#: Added to the last tool result a turn allows.
LAST_ROUND_NOTE = "\n(That was the last tool call allowed for this message: answer now.)"


class TurnListener(Protocol):
    """What a turn reports while it runs (every method is called from the turn's thread)."""

    def text(self, delta: str) -> None:
        """The next piece of the reply's text (never a tool request line)."""

    def tool_call(self, name: str) -> None:
        """The model began a tool call; its text so far is complete."""

    def tool_result(self, line: str) -> None:
        """One line about a tool call that ran."""

    def note(self, line: str) -> None:
        """A lifecycle note or warning (capture, flush, compaction, fallback…)."""


class QuietListener:
    """A :class:`TurnListener` that shows nothing (piped input prints the :class:`Output`)."""

    def text(self, delta: str) -> None:
        pass

    def tool_call(self, name: str) -> None:
        pass

    def tool_result(self, line: str) -> None:
        pass

    def note(self, line: str) -> None:
        pass


@dataclass
class Output:
    """What one line of input produced.

    Attributes:
        text: the assistant's final reply, or a command's output.
        notes: lifecycle events and warnings (capture, flush, compaction, archive…).
        tools: one line per tool call.
        tokens_sent: tokens of the largest request sent to the model for this line (memdir's
            count, tool definitions included).
        tokens_in: input tokens of all this line's model requests (the provider's counts when
            it reported them, else memdir's).
        tokens_out: output tokens of those requests (likewise).
        requests: how many model requests this line made.
        usage_reported: every request's tokens came from the provider.
        error: what failed (the history is kept).
        interrupted: the user stopped the reply (what was shown is kept).
        quit: the session ended.
    """

    text: str = ""
    notes: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    tokens_sent: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    requests: int = 0
    usage_reported: bool = True
    error: str | None = None
    interrupted: bool = False
    quit: bool = False


@dataclass(frozen=True)
class Answer:
    """One request's outcome: the reply, or the part of it shown before Ctrl-C."""

    reply: ChatReply
    interrupted: bool = False


class RequestLineFilter:
    """Passes streamed text on, holding back a line that may be a text-protocol tool request
    (it starts with ``{``) until it ends; a request line is dropped, anything else released."""

    def __init__(self) -> None:
        self._line = ""

    def feed(self, text: str) -> str:
        """Take the next piece of text; return what may be shown now."""
        shown: list[str] = []
        for piece in text.splitlines(keepends=True):
            self._line += piece
            if self._line.endswith(("\n", "\r")):
                line, self._line = self._line, ""
                if find_tool_request(line) is None:
                    shown.append(line)
            elif not _may_be_request(self._line):
                shown.append(self._line)
                self._line = ""
        return "".join(shown)

    def finish(self) -> str:
        """What is left at the end of the reply (nothing if it was a request line)."""
        line, self._line = self._line, ""
        return "" if find_tool_request(line) is not None else line


def _may_be_request(partial: str) -> bool:
    head = partial.lstrip().lstrip("`").lstrip()
    return not head or head.startswith("{")


class ModelCaller:
    """Makes the model requests of one turn and keeps its token account in ``out``.

    Args:
        llm: the model; an LLM without :class:`~memdir.llm.chat.ChatLLM` is called with
            ``complete`` (no native tools, no streaming).
        out: the turn's output (token counts are added to it).
        listener: told the reply's text as it is shown.
        stream: stream the reply when the model can.
        max_tokens: the reply's token limit.
    """

    def __init__(
        self,
        llm: LLM,
        out: Output,
        listener: TurnListener,
        *,
        stream: bool,
        max_tokens: int | None,
    ) -> None:
        self.llm = llm
        self.out = out
        self.listener = listener
        self.stream = stream and isinstance(llm, ChatLLM)
        self.max_tokens = max_tokens

    def call(
        self, wire: Sequence[Message], system: str, tools: Sequence[ToolDefinition] = ()
    ) -> Answer:
        """Send ``wire`` and return the answer; Ctrl-C while streaming gives an interrupted
        answer holding what was shown.

        Raises:
            ToolsUnsupported: the server refused ``tools``.
            MemdirError: the provider failed (nothing of the reply was kept).
        """
        tokens = count_message_tokens(
            wire, system=system, model=self.llm.model, tools_json=tools_json(tools)
        )
        self.out.tokens_sent = max(self.out.tokens_sent, tokens)
        self.out.requests += 1
        llm = self.llm
        if self.stream and isinstance(llm, ChatLLM):
            answer = self._streamed(llm, wire, system, tools)
        else:
            if isinstance(llm, ChatLLM):
                reply = llm.chat(wire, system=system, tools=tools, max_tokens=self.max_tokens)
            else:
                reply = ChatReply(llm.complete(wire, system=system, max_tokens=self.max_tokens))
            answer = Answer(reply)
            shown = RequestLineFilter()
            text = shown.feed(reply.text) + shown.finish()
            if text.strip():
                self.listener.text(text)
        self._account(tokens, answer.reply)
        return answer

    def _streamed(
        self,
        llm: ChatLLM,
        wire: Sequence[Message],
        system: str,
        tools: Sequence[ToolDefinition],
    ) -> Answer:
        shown = RequestLineFilter()
        pieces: list[str] = []
        events = llm.stream(wire, system=system, tools=tools, max_tokens=self.max_tokens)
        try:
            for event in events:
                if isinstance(event, TextDelta):
                    pieces.append(event.text)
                    self._show(shown.feed(event.text))
                elif isinstance(event, ToolCallStart):
                    self._show(shown.finish())
                    self.listener.tool_call(event.name)
                elif isinstance(event, ReplyDone):
                    self._show(shown.finish())
                    return Answer(event.reply)
        except KeyboardInterrupt:
            close = getattr(events, "close", None)
            if callable(close):
                close()  # drop the connection: the rest of the reply is not wanted
            return Answer(ChatReply("".join(pieces)), interrupted=True)
        raise ProviderResponseError(f"{self.llm.name}: the reply stream ended before the reply")

    def _show(self, text: str) -> None:
        if text:
            self.listener.text(text)

    def _account(self, tokens: int, reply: ChatReply) -> None:
        usage = reply.usage
        reported_in = usage.input_tokens if usage else None
        reported_out = usage.output_tokens if usage else None
        self.out.tokens_in += reported_in if reported_in is not None else tokens
        if reported_out is not None:
            self.out.tokens_out += reported_out
        else:
            calls = " ".join(f"{c.name} {c.arguments}" for c in reply.tool_calls)
            self.out.tokens_out += count_tokens(f"{reply.text} {calls}".strip(), self.llm.model)
        if reported_in is None or reported_out is None:
            self.out.usage_reported = False


def run_native_calls(
    memory: Memory,
    calls: Sequence[ToolCall],
    out: Output,
    listener: TurnListener,
    *,
    last_round: bool,
) -> list[Message]:
    """Run one round of native tool calls; return one ``tool`` message per call, in order."""
    results: list[Message] = []
    for n, call in enumerate(calls):
        if n >= MAX_CALLS_PER_ROUND:
            result: dict[str, Any] = {
                "error": f"not run: at most {MAX_CALLS_PER_ROUND} tool calls are run at once; "
                "ask for the rest in your next reply"
            }
        else:
            result = run_tool(memory, _request(call))
        line = describe_result(call.name or "tool", result)
        out.tools.append(line)
        listener.tool_result(line)
        content = tool_content(result)
        results.append(Message("tool", content, tool_call_id=call.id))
    if last_round and results:
        final = results[-1]
        results[-1] = Message(
            "tool", final.content + LAST_ROUND_NOTE, tool_call_id=final.tool_call_id
        )
    return results


def _request(call: ToolCall) -> ToolRequest:
    """A native call as the tool runner's request; arguments that do not parse become an
    error the model is told about."""
    try:
        args = call.parsed_arguments()
    except ValueError as exc:
        return ToolRequest(call.name, {}, "", error=f"{exc}: send the arguments as one JSON object")
    return ToolRequest(call.name, args, "")
