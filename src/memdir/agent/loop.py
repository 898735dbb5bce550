"""The chat loop behind ``memdir chat``: turns, tools, slash commands and the memory lifecycle.

Each user message goes through, in order:

1. auto-capture (:mod:`memdir.lifecycle.capture`) and auto-recall (the ``<relevant-memories>``
   block, sent with this message only);
2. upkeep: a memory flush once the request passes the flush threshold (once per compaction
   cycle), then a compaction once it passes the budget (the flush always comes first);
3. the model call, with up to :data:`~memdir.agent.tools.MAX_TOOL_CALLS` tool calls.

``/new`` flushes, archives the session, extracts durable items and starts a new session;
``/compact`` flushes and compacts now; ``/remember TEXT`` extracts from TEXT (falling back to the
daily log); ``/status`` reports; ``/quit`` extracts and ends. A provider failure is reported
and never loses the history.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from memdir.agent.context import (
    Recall,
    build_system_prompt,
    daily_notes_block,
    recall_for,
    summary_message,
    with_recall,
)
from memdir.agent.session import Session
from memdir.agent.tools import (
    MAX_TOOL_CALLS,
    describe_result,
    find_tool_request,
    run_tool,
    tool_message,
)
from memdir.clock import now
from memdir.config import LLMConfig
from memdir.errors import MemdirError
from memdir.lifecycle.archive import archive_session
from memdir.lifecycle.capture import AutoCapture
from memdir.lifecycle.compact import (
    CompactionResult,
    compact_history,
    compaction_budget,
    split_for_compaction,
)
from memdir.lifecycle.flush import flush_due, flush_threshold, run_memory_flush
from memdir.llm.base import LLM, Message, count_message_tokens
from memdir.memory import Memory

HELP = """\
/new            archive this session, save what matters, start a new one
/compact        summarise the older turns now
/remember TEXT  save TEXT to long-term memory
/status         tokens, compactions, memory index
/quit           save what matters and leave (Ctrl-D too)"""
_LAST_CALL_NOTE = "\n(That was the last tool call allowed for this message: answer now.)"


@dataclass
class Output:
    """What one line of input produced.

    Attributes:
        text: the assistant's reply, or a command's output.
        notes: lifecycle events and warnings (capture, flush, compaction, archive…).
        tools: one line per tool call.
        tokens_sent: tokens of the largest request sent to the model for this line.
        error: what failed (the history is kept).
        quit: the session ended.
    """

    text: str = ""
    notes: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    tokens_sent: int = 0
    error: str | None = None
    quit: bool = False


class ChatAgent:
    """A chat session over one :class:`Memory` with one :class:`LLM`.

    Args:
        memory: the memory; its scope decides what the model may see and write.
        llm: the chat model (also used for flush, compaction, extraction and archive slugs).
        session: a session to continue; None starts a new one.
        llm_config: the token budgets; None uses ``memory.config.llm``.
        recall: inject ``<relevant-memories>`` for each message.
        capture: auto-capture trigger messages to the daily log.
        source: recorded in session archives.
    """

    def __init__(
        self,
        memory: Memory,
        llm: LLM,
        *,
        session: Session | None = None,
        llm_config: LLMConfig | None = None,
        recall: bool = True,
        capture: bool = True,
        source: str = "memdir chat",
    ) -> None:
        config = llm_config if llm_config is not None else memory.config.llm
        self.memory = memory
        self.llm = llm
        self.context_window = config.context_window
        self.max_output_tokens = config.max_output_tokens
        self.budget = compaction_budget(config.context_window, config.max_output_tokens)
        self.flush_at = flush_threshold(config.context_window, config.max_output_tokens)
        self.private = memory.scope == "private"
        self.recall_enabled = recall
        self.capture_enabled = capture
        self.source = source
        self.session = session or self._new_session()
        #: The outcome of the last compaction attempt (None: nothing was attempted).
        self.last_compaction: CompactionResult | None = None
        self._begin()

    # -- the context ------------------------------------------------------------------------

    @property
    def system_prompt(self) -> str:
        return build_system_prompt(
            self.memory.workspace,
            private=self.private,
            daily_notes=self.daily_notes,
            max_tool_calls=MAX_TOOL_CALLS,
        )

    def context_messages(self) -> list[Message]:
        """The conversation as sent to the model: the compaction summary (if any), then the
        history, tool results travelling as user messages."""
        return _wire(self.session.history, self.session.summary)

    def context_tokens(self, extra: str = "") -> int:
        """Tokens of the request the history makes now (plus ``extra`` text)."""
        wire = self.context_messages()
        if extra:
            wire.append(Message("user", extra))
        return count_message_tokens(wire, system=self.system_prompt, model=self.llm.model)

    # -- input ------------------------------------------------------------------------------

    def handle(self, line: str) -> Output:
        """Run one line of input: a slash command or a message to the model."""
        text = line.strip()
        if not text:
            return Output()
        if not text.startswith("/") or text.startswith("//"):
            return self.send(text.removeprefix("/") if text.startswith("//") else text)
        command, _, argument = text.partition(" ")
        command = command.lower()
        if command in ("/quit", "/exit", "/q"):
            return Output(notes=self.end(), quit=True)
        if command == "/new":
            return Output("new session started", notes=self.new_session())
        if command == "/compact":
            return Output(notes=self.compact(manual=True))
        if command == "/remember":
            if not argument.strip():
                return Output(error="usage: /remember TEXT")
            return Output(notes=self.remember(argument.strip()))
        if command == "/status":
            return Output("\n".join(self.status_lines()))
        if command in ("/help", "/?"):
            return Output(HELP)
        return Output(error=f"unknown command {command}: try /help")

    def send(self, text: str) -> Output:
        """Send a user message; returns the reply, tool calls and lifecycle notes."""
        out = Output()
        # Recall first: the message must not be recalled as its own memory once captured.
        recall = recall_for(self.memory, text) if self.recall_enabled else Recall("", ())
        if recall.warning:
            out.notes.append(recall.warning)
        if self.capture is not None:
            captured = self.capture.consider(text, now=now())
            if captured is not None and captured.written:
                out.notes.append(f"captured to {captured.citation}")
        self.session.add(Message("user", text))
        out.notes.extend(self._upkeep(recall.block))
        self._run_turn(text, recall, out)
        return out

    # -- the turn ---------------------------------------------------------------------------

    def _run_turn(self, text: str, recall: Recall, out: Output) -> None:
        wire = self.context_messages()
        wire[-1] = Message("user", with_recall(text, recall))
        system = self.system_prompt
        calls = 0
        while True:
            tokens = count_message_tokens(wire, system=system, model=self.llm.model)
            out.tokens_sent = max(out.tokens_sent, tokens)
            try:
                reply = self.llm.complete(wire, system=system, max_tokens=self.max_output_tokens)
            except MemdirError as exc:
                out.error = f"the model failed, your message is kept: {exc}"
                return
            request = find_tool_request(reply)
            if request is None:
                break
            if calls >= MAX_TOOL_CALLS:
                reply = request.before or (
                    f"(Stopped: the model asked for more than {MAX_TOOL_CALLS} tool calls.)"
                )
                break
            calls += 1
            result = run_tool(self.memory, request)
            out.tools.append(describe_result(request.name or "tool", result))
            content = tool_message(request.name or "tool", result)
            if calls == MAX_TOOL_CALLS:
                content += _LAST_CALL_NOTE
            asked, answered = Message("assistant", reply.strip()), Message("tool", content)
            self.session.add(asked)
            self.session.add(answered)
            wire.extend([asked, Message("user", answered.content)])
        out.text = reply.strip()
        self.session.add(Message("assistant", out.text))

    def _upkeep(self, extra: str) -> list[str]:
        """Flush and compact as the size of the coming request requires."""
        notes: list[str] = []
        tokens = self.context_tokens(extra)
        if flush_due(
            tokens,
            self.session.live_bytes,
            context_window=self.context_window,
            max_output_tokens=self.max_output_tokens,
            flushed_this_cycle=self.session.flushed_this_cycle,
        ):
            notes.extend(self._flush())
        if tokens > self.budget:
            notes.extend(self.compact(manual=False))
        return notes

    # -- lifecycle --------------------------------------------------------------------------

    def _flush(self) -> list[str]:
        result = run_memory_flush(
            self.memory.workspace,
            self.context_messages(),
            self.llm,
            now=now(),
            system=self.system_prompt,
            max_tokens=self.max_output_tokens,
        )
        # Marked even when it failed: a failing provider is not retried on every turn.
        self.session.mark_flushed(result.appended)
        notes = list(result.warnings)
        if result.error:
            notes.append(result.error)
        elif result.no_reply:
            notes.append("memory flush: nothing new to save")
        else:
            where = sorted({r.path for r in result.written})
            notes.append(
                f"memory flush: {result.appended} line(s) saved to {', '.join(where) or '-'}"
            )
        return notes

    def compact(self, *, manual: bool) -> list[str]:
        """Flush (once this cycle), then summarise all but the last 3 user turns."""
        self.last_compaction = None
        older, _ = split_for_compaction(self.session.history)
        if not older:
            if manual:
                return ["nothing to compact: only the last 3 user turns are in the context"]
            return ["the context is over its budget, but only the last 3 user turns are left"]
        notes = [] if self.session.flushed_this_cycle else self._flush()
        before = self.context_tokens()
        result = self.last_compaction = compact_history(
            self.session.history,
            self.llm,
            previous_summary=self.session.summary,
            max_tokens=self.max_output_tokens,
            model=self.llm.model,
        )
        if not result.ok:
            notes.append(result.error or "compaction failed, history kept")
            return notes
        self.session.apply_compaction(result.summary, result.messages)
        detail = f"{result.summarised_messages} messages → summary of {result.summary_tokens:,} "
        detail += f"tokens ({result.ratio:.0%} of {result.summarised_tokens:,}, target ≤ 15%)"
        if result.added_identifiers:
            detail += f"; {len(result.added_identifiers)} identifier(s) added back"
        if result.truncated:
            detail += "; summary truncated"
        notes.append(f"compacted: {detail}; context {before:,} → {self.context_tokens():,}")
        return notes

    def remember(self, text: str) -> list[str]:
        """``/remember TEXT``: extract items from TEXT; the daily log when none come out."""
        report = self.memory.extract([Message("user", text)], llm=self.llm)
        notes = list(report.warnings)
        for result in report.results:
            notes.append(f"remembered in {result.citation}" if result.written else result.reason)
        if not report.results:
            result = self.memory.write(text, target="daily")
            notes.append(f"remembered in {result.citation}" if result.written else result.reason)
        return notes

    def new_session(self) -> list[str]:
        """``/new``: flush, archive, extract, then start a fresh session."""
        notes: list[str] = []
        has_turns = any(m.role == "user" for m in self.session.history)
        if has_turns and not self.session.flushed_this_cycle:
            notes.extend(self._flush())
        try:
            archived = archive_session(
                self.memory.workspace,
                self._dialogue(),
                session_id=self.session.id,
                started_at=self.session.started_at,
                now=now(),
                llm=self.llm,
                source=f"{self.source} ({self.session.scope} session)",
            )
        except MemdirError as exc:
            notes.append(f"session not archived: {exc}")
        else:
            if archived is not None:
                how = "" if archived.from_llm else f" (time slug: {archived.note or 'fallback'})"
                notes.append(f"archived {archived.messages} messages to {archived.path}{how}")
        notes.extend(self._extract_session())
        self.session = self._new_session()
        self._begin()
        return notes

    def end(self) -> list[str]:
        """End of the session (``/quit``, end of input): extract what is worth keeping."""
        return self._extract_session()

    def status_lines(self) -> list[str]:
        """What ``/status`` shows."""
        session = self.session
        info = self.memory.status()
        captured = len(self.capture.captured) if self.capture is not None else 0
        return [
            f"session   {session.id} ({session.scope}), "
            f"started {session.started_at:%Y-%m-%d %H:%M}",
            f"context   {self.context_tokens():,} / {self.budget:,} tokens "
            f"(flush at {self.flush_at:,}, window {self.context_window:,})",
            f"history   {len(session.history)} messages, {session.user_turns} user turns; "
            f"{session.compactions} compaction(s); flushed this cycle: "
            f"{'yes' if session.flushed_this_cycle else 'no'}",
            f"captured  {captured} this session",
            f"model     {self.llm.name} / {self.llm.model}",
            f"memory    {info['files']} files, {info['chunks']} chunks, {info['mode']}",
        ]

    # -- helpers ----------------------------------------------------------------------------

    def _new_session(self) -> Session:
        return Session.start(self.memory.workspace.state_dir, now=now(), scope=self.memory.scope)

    def _begin(self) -> None:
        self.daily_notes = daily_notes_block(self.memory.workspace, now())
        self.capture = AutoCapture(self.memory.workspace) if self.capture_enabled else None

    def _dialogue(self) -> list[Message]:
        """The session's user and assistant messages, without tool requests."""
        return [
            m
            for m in self.session.dialogue
            if m.role == "user" or (m.role == "assistant" and find_tool_request(m.content) is None)
        ]

    def _extract_session(self) -> list[str]:
        session = self.session
        if session.user_turns <= session.extracted_turns:
            return []
        messages = self._dialogue()
        if session.summary:
            messages.insert(
                0, Message("user", f"[summary of the earlier conversation]\n{session.summary}")
            )
        report = self.memory.extract(messages, llm=self.llm)
        session.mark_extracted()
        notes = list(report.warnings)
        written = report.written
        if written:
            notes.append(
                f"saved {len(written)} item(s) to memory: " + ", ".join(r.citation for r in written)
            )
        return notes


def _wire(messages: Sequence[Message], summary: str | None = None) -> list[Message]:
    """Messages as sent to the model: tool results travel as user messages (every provider
    accepts those, with or without native tool support), after the summary if there is one."""
    wire = [summary_message(summary)] if summary else []
    wire.extend(Message("user", m.content) if m.role == "tool" else m for m in messages)
    return wire
