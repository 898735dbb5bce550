"""The chat loop behind ``memdir chat``: turns, tools, slash commands and the memory lifecycle.

Each user message goes through, in order:

1. auto-capture (:meth:`Memory.capture <memdir.memory.facade.Memory.capture>`) and auto-recall (the
   ``<relevant-memories>`` block of :func:`memdir.memory.context.recall_for`, sent with this
   message only);
2. upkeep: a memory flush once the request passes the flush threshold (once per compaction
   cycle), then a compaction once it passes the budget (the flush always comes first);
3. the model call, streamed when asked, with up to :data:`~memdir.agent.turn.MAX_TOOL_ROUNDS`
   rounds of tool calls.

Tools are called natively when the model can (:class:`~memdir.llm.chat.ChatLLM`: OpenAI
``tools`` / Anthropic ``tool_use``, parallel calls included). A server that refuses tool
definitions is confirmed with one minimal request, remembered
(:mod:`memdir.llm.tool_support`), and the agent falls back to the text protocol of
:mod:`memdir.agent.tools`, whose request line it also honours in a native reply (a model that
writes its calls as text, a session resumed from before native tools).

``/new`` flushes, archives the session, extracts durable items and starts a new session;
``/compact`` flushes and compacts now; ``/remember TEXT`` extracts from TEXT (falling back to the
daily log); ``/search QUERY`` searches memory without the model; ``/status`` reports; ``/quit``
extracts and ends. A provider failure is reported and never loses the history; Ctrl-C during a
streamed reply keeps what was shown, marked as interrupted.

What writes memory runs through the facade, as it does for Claude Code's hooks
(:meth:`~memdir.memory.facade.Memory.flush`, :meth:`~memdir.memory.facade.Memory.archive`,
:meth:`~memdir.memory.facade.Memory.capture`, :meth:`~memdir.memory.facade.Memory.extract`); this
loop decides when, and says what happened.
"""

from __future__ import annotations

from memdir.agent.context import build_system_prompt, with_recall
from memdir.agent.session import Session
from memdir.agent.tool_mode import ToolCalling, ToolMode
from memdir.agent.tools import (
    ToolRequest,
    describe_result,
    find_tool_request,
    run_tool,
    tool_definitions,
    tool_message,
)
from memdir.agent.turn import (
    INTERRUPTED_MARK,
    LAST_ROUND_NOTE,
    MAX_TOOL_ROUNDS,
    Answer,
    ModelCaller,
    Output,
    QuietListener,
    TurnListener,
    run_native_calls,
)
from memdir.agent.wire import native_wire, text_wire
from memdir.clock import now
from memdir.config.settings import LLMConfig
from memdir.errors import MemdirError, ToolsUnsupported
from memdir.lifecycle.compact import (
    CompactionResult,
    compact_history,
    compaction_budget,
    split_for_compaction,
)
from memdir.lifecycle.flush import flush_due, flush_threshold
from memdir.llm.base import LLM, Message, count_message_tokens
from memdir.llm.chat import ToolDefinition, tools_json
from memdir.memory.context import Recall, daily_notes_block, recall_for
from memdir.memory.facade import Memory

__all__ = ["HELP", "ChatAgent", "Output", "ToolMode"]

HELP = """\
/new            archive this session, save what matters, start a new one
/compact        summarise the older turns now
/remember TEXT  save TEXT to long-term memory
/search QUERY   search memory yourself (the model is not asked)
/status         tokens, compactions, memory index, tool calling
/quit           save what matters and leave (Ctrl-D too)"""


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
        stream: stream replies (to the listener given to :meth:`handle`) when the model can.
        tools: ``auto`` calls tools natively unless this server refused them before (then the
            text protocol); ``native`` always tries native calls (and forgets a remembered
            refusal once they work); ``text`` always uses the text protocol.
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
        stream: bool = False,
        tools: ToolMode = "auto",
    ) -> None:
        config = llm_config if llm_config is not None else memory.config.llm
        self.memory = memory
        self.llm = llm
        self.context_window = config.context_window
        self.max_output_tokens = config.max_output_tokens
        self.budget = compaction_budget(config.context_window, config.max_output_tokens)
        self.flush_at = flush_threshold(config.context_window, config.max_output_tokens)
        self.private = memory.scope == "private"
        #: The memory tools (the contract shared with the MCP server), for this config and scope.
        self.tools = tool_definitions(memory)
        self.recall_enabled = recall
        self.capture_enabled = capture
        self.source = source
        self.stream = stream
        #: How tools are called (native or text protocol, and why).
        self.tool_calling = ToolCalling(llm, tools)
        self.session = session or self._new_session()
        #: The outcome of the last compaction attempt (None: nothing was attempted).
        self.last_compaction: CompactionResult | None = None
        #: What the last line of input produced (for a status line).
        self.last_output: Output | None = None
        self._begin()

    # -- the context ------------------------------------------------------------------------

    @property
    def native_tools(self) -> bool:
        """Tools are called natively (not through the text protocol)."""
        return self.tool_calling.native

    @property
    def tool_definitions(self) -> tuple[ToolDefinition, ...]:
        """The tools sent with each chat request (none with the text protocol)."""
        return self.tools if self.native_tools else ()

    @property
    def system_prompt(self) -> str:
        return build_system_prompt(
            self.memory.workspace,
            private=self.private,
            daily_notes=self.daily_notes,
            tools=self.tools,
            max_tool_calls=MAX_TOOL_ROUNDS,
            native_tools=self.native_tools,
        )

    def context_messages(self) -> list[Message]:
        """The conversation as the chat request sends it: the compaction summary (if any), then
        the history, tool calls native or as text (see :mod:`memdir.agent.wire`)."""
        wire = native_wire if self.native_tools else text_wire
        return wire(self.session.history, self.session.summary)

    def context_tokens(self, extra: str = "") -> int:
        """Tokens of the request the history makes now (plus ``extra`` text), tool definitions
        included."""
        wire = self.context_messages()
        if extra:
            wire.append(Message("user", extra))
        return count_message_tokens(
            wire,
            system=self.system_prompt,
            model=self.llm.model,
            tools_json=tools_json(self.tool_definitions),
        )

    # -- input ------------------------------------------------------------------------------

    def handle(self, line: str, listener: TurnListener | None = None) -> Output:
        """Run one line of input: a slash command or a message to the model.

        ``listener`` is told the reply and the notes as they come (see
        :class:`~memdir.agent.turn.TurnListener`); the returned :class:`Output` holds them all.
        """
        out = self._handle(line, listener or QuietListener())
        self.last_output = out
        return out

    def _handle(self, line: str, listener: TurnListener) -> Output:
        text = line.strip()
        if not text:
            return Output()
        if not text.startswith("/") or text.startswith("//"):
            message = text.removeprefix("/") if text.startswith("//") else text
            return self.send(message, listener)
        command, _, argument = text.partition(" ")
        out = self._command(command.lower(), argument.strip())
        for note in out.notes:
            listener.note(note)
        return out

    def _command(self, command: str, argument: str) -> Output:
        if command in ("/quit", "/exit", "/q"):
            return Output(notes=self.end(), quit=True)
        if command == "/new":
            return Output("new session started", notes=self.new_session())
        if command == "/compact":
            return Output(notes=self.compact(manual=True))
        if command == "/remember":
            if not argument:
                return Output(error="usage: /remember TEXT")
            return Output(notes=self.remember(argument))
        if command == "/search":
            if not argument:
                return Output(error="usage: /search QUERY")
            return self.search(argument)
        if command == "/status":
            return Output("\n".join(self.status_lines()))
        if command in ("/help", "/?"):
            return Output(HELP)
        return Output(error=f"unknown command {command}: try /help")

    def send(self, text: str, listener: TurnListener | None = None) -> Output:
        """Send a user message; returns the reply, tool calls and lifecycle notes."""
        listener = listener or QuietListener()
        out = Output()
        # Recall first: the message must not be recalled as its own memory once captured.
        recall = recall_for(self.memory, text) if self.recall_enabled else Recall("", ())
        if recall.warning:
            self._note(out, listener, recall.warning)
        if self.capture is not None:
            captured = self.capture.consider(text, now=now())
            if captured is not None and captured.written:
                self._note(out, listener, f"captured to {captured.citation}")
        self.session.add(Message("user", text))
        for note in self._upkeep(recall.block):
            self._note(out, listener, note)
        self._run_turn(text, recall, out, listener)
        return out

    def search(self, query: str) -> Output:
        """``/search QUERY``: the hits, as memory_search would give them to the model."""
        result = run_tool(self.memory, ToolRequest("memory_search", {"query": query}, ""))
        if "error" in result:
            return Output(error=str(result["error"]))
        lines = [
            f"{hit['citation']}  ({hit['score']:.2f})\n    {' '.join(hit['snippet'].split())}"
            for hit in result.get("results", [])
        ]
        return Output(
            "\n".join(lines) or "no results", notes=[str(w) for w in result.get("warnings", [])]
        )

    # -- the turn ---------------------------------------------------------------------------

    def _run_turn(self, text: str, recall: Recall, out: Output, listener: TurnListener) -> None:
        caller = ModelCaller(
            self.llm, out, listener, stream=self.stream, max_tokens=self.max_output_tokens
        )
        rounds = 0
        wire = self._turn_wire(text, recall)
        try:
            while True:
                try:
                    answer = caller.call(wire, self.system_prompt, self.tool_definitions)
                except ToolsUnsupported as exc:
                    fallback = self.tool_calling.refused(exc, wire)
                    if fallback.error:
                        out.error = fallback.error
                        return
                    self._note(out, listener, fallback.note)
                    wire = self._turn_wire(text, recall)
                    continue
                except MemdirError as exc:
                    out.error = f"the model failed, your message is kept: {exc}"
                    return
                self.tool_calling.worked()
                if answer.interrupted:
                    self._keep_interrupted(answer.reply.text, out)
                    return
                reply = answer.reply
                if reply.truncated:
                    self._note(
                        out,
                        listener,
                        f"the reply reached the {self.max_output_tokens:,}-token limit and was "
                        "cut (llm.max_output_tokens)",
                    )
                request = None if reply.tool_calls else find_tool_request(reply.text)
                if not reply.tool_calls and request is None:
                    out.text = reply.text.strip()
                    self.session.add(Message("assistant", out.text))
                    return
                if rounds >= MAX_TOOL_ROUNDS:
                    self._stop_at_the_cap(reply.text, request, out, listener)
                    return
                rounds += 1
                wire.extend(self._tool_round(answer, request, rounds, out, listener))
        except KeyboardInterrupt:
            self._keep_interrupted("", out)

    def _turn_wire(self, text: str, recall: Recall) -> list[Message]:
        """The request for this turn: the context with the message's recall block added."""
        wire = self.context_messages()
        wire[-1] = Message("user", with_recall(text, recall))
        return wire

    def _tool_round(
        self,
        answer: Answer,
        request: ToolRequest | None,
        rounds: int,
        out: Output,
        listener: TurnListener,
    ) -> list[Message]:
        """Run the reply's tool calls; add them and their results to the history; return the
        messages that continue the request."""
        reply = answer.reply
        last = rounds == MAX_TOOL_ROUNDS
        if reply.tool_calls:
            results = run_native_calls(
                self.memory, reply.tool_calls, out, listener, last_round=last
            )
            asked = reply.message()
            for message in (asked, *results):
                self.session.add(message)
            return [asked, *results]
        assert request is not None
        result = run_tool(self.memory, request)
        line = describe_result(request.name or "tool", result)
        out.tools.append(line)
        listener.tool_result(line)
        content = tool_message(request.name or "tool", result) + (LAST_ROUND_NOTE if last else "")
        asked, answered = Message("assistant", reply.text.strip()), Message("tool", content)
        self.session.add(asked)
        self.session.add(answered)
        return [asked, Message("user", content)]

    def _stop_at_the_cap(
        self, text: str, request: ToolRequest | None, out: Output, listener: TurnListener
    ) -> None:
        """The model wants tools again after the last round allowed: keep its words only."""
        stop = f"(Stopped: the model asked for more than {MAX_TOOL_ROUNDS} tool calls.)"
        words = request.before if request is not None else text.strip()
        out.text = words or stop
        if words:
            self._note(out, listener, stop.strip("()"))
        else:
            listener.text(stop)
        self.session.add(Message("assistant", out.text))

    def _keep_interrupted(self, shown: str, out: Output) -> None:
        """Ctrl-C: answer any tool call left open, then keep what was shown, marked."""
        self._close_open_calls()
        shown = shown.rstrip()
        out.text = shown
        out.interrupted = True
        marked = f"{shown}\n\n{INTERRUPTED_MARK}" if shown else INTERRUPTED_MARK
        self.session.add(Message("assistant", marked), interrupted=True)

    def _close_open_calls(self) -> None:
        """Give every native call of the last round a result (providers refuse a history with a
        call left unanswered)."""
        history = self.session.history
        last = next((i for i in range(len(history) - 1, -1, -1) if history[i].tool_calls), None)
        if last is None:
            return
        answered = {m.tool_call_id for m in history[last + 1 :] if m.tool_call_id}
        for call in history[last].tool_calls:
            if call.id not in answered:
                error = '{"error": "the user interrupted the reply before this result was kept"}'
                self.session.add(Message("tool", error, tool_call_id=call.id))

    @staticmethod
    def _note(out: Output, listener: TurnListener, line: str) -> None:
        out.notes.append(line)
        listener.note(line)

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
        result = self.memory.flush(
            # As text: the flush sends no tool definitions, and Anthropic refuses tool blocks
            # in a request without them.
            text_wire(self.session.history, self.session.summary),
            llm=self.llm,
            system=self.system_prompt,
            max_tokens=self.max_output_tokens,
            session=self.session.id,
        )
        # Marked even when it failed: a failing provider is not retried on every turn.
        self.session.mark_flushed(result.appended)
        notes = list(result.warnings)
        if result.error:
            notes.append(result.error)
        elif result.no_reply:
            notes.append("memory flush: nothing new to save")
        else:
            where = ", ".join(result.paths) or "-"
            notes.append(f"memory flush: {result.appended} line(s) saved to {where}")
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
        report = self.memory.extract(
            [Message("user", text)], llm=self.llm, session=self.session.id, via="chat /remember"
        )
        notes = list(report.warnings)
        for result in report.results:
            notes.append(f"remembered in {result.citation}" if result.written else result.reason)
        if not report.results:
            result = self.memory.write(text, target="daily", via="chat /remember")
            notes.append(f"remembered in {result.citation}" if result.written else result.reason)
        return notes

    def new_session(self) -> list[str]:
        """``/new``: flush, archive, extract, then start a fresh session."""
        notes: list[str] = []
        has_turns = any(m.role == "user" for m in self.session.history)
        if has_turns and not self.session.flushed_this_cycle:
            notes.extend(self._flush())
        try:
            archived = self.memory.archive(
                self._dialogue(),
                session_id=self.session.id,
                started_at=self.session.started_at,
                llm=self.llm,
                source=f"{self.source} ({self.session.scope} session)",
            )
        except MemdirError as exc:
            notes.append(f"session not archived: {exc}")
        else:
            if archived is not None:
                notes.append(archived.summary("fallback"))
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
        last = self.last_output
        if last is not None and last.requests:
            counted = "the provider's counts" if last.usage_reported else "memdir's count"
            last_turn = (
                f"{last.requests} request(s), {last.tokens_in:,} tokens in, "
                f"{last.tokens_out:,} out ({counted})"
            )
        else:
            last_turn = "-"
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
            f"tools     {self.tool_calling.describe()}"
            + (", streamed replies" if self.stream else ""),
            f"last turn {last_turn}",
            f"memory    {info['files']} files, {info['chunks']} chunks, {info['mode']}",
        ]

    # -- helpers ----------------------------------------------------------------------------

    def _new_session(self) -> Session:
        return Session.start(self.memory.workspace.state_dir, now=now(), scope=self.memory.scope)

    def _begin(self) -> None:
        self.daily_notes = daily_notes_block(self.memory.workspace, now())
        self.capture = (
            self.memory.capture(session=self.session.id) if self.capture_enabled else None
        )

    def _dialogue(self) -> list[Message]:
        """The session's user and assistant messages, without tool requests."""
        return [
            m
            for m in self.session.dialogue
            if m.role == "user"
            or (m.role == "assistant" and not m.tool_calls and find_tool_request(m.content) is None)
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
        report = self.memory.extract(messages, llm=self.llm, session=session.id)
        session.mark_extracted()
        notes = list(report.warnings)
        written = report.written
        if written:
            notes.append(
                f"saved {len(written)} item(s) to memory: " + ", ".join(r.citation for r in written)
            )
        return notes
