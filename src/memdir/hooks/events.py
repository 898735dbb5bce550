"""What ``memdir hook <event>`` does for Claude Code: OpenClaw's memory lifecycle, in its hooks.

Claude Code runs the command with the hook's JSON on stdin (``session_id``,
``transcript_path``, ``cwd``, ``hook_event_name``, and ``source`` / ``prompt`` / ``trigger`` /
``reason``). :func:`run_hook` answers:

- ``session-start`` (``SessionStart``): the session's memory, USER.md and MEMORY.md, then today's
  and yesterday's daily logs, within the bootstrap caps and ``[hooks] session_start_chars``
  (:func:`~memdir.memory.context.session_memory_context`), as additional context.
- ``user-prompt-submit`` (``UserPromptSubmit``): auto-recall, the hits for the prompt scoring at
  least ``[hooks] recall_min_score`` (0.3: a 30 % chance of answering with the default model)
  as short cited snippets in ``<relevant-memories>``, or nothing
  (:func:`~memdir.memory.context.recall_for`), within ``[hooks] recall_timeout``.
- ``pre-compact`` (``PreCompact``): the memory flush of ``memdir chat``
  (:meth:`Memory.flush <memdir.memory.facade.Memory.flush>`) over the transcript written since the
  last flush, appending durable facts to today's daily log (append-only, deduplicated); once per
  compaction (the transcript line it got to is remembered per session). Without an LLM it
  auto-captures what the user asked to be remembered (:meth:`Memory.capture
  <memdir.memory.facade.Memory.capture>`).
- ``session-end`` (``SessionEnd``): the session archive of ``/new``
  (:meth:`Memory.archive <memdir.memory.facade.Memory.archive>`): the last messages to
  ``memory/<date>-<slug>.md``, the slug from the LLM, else the start time ``HHMM``.

A hook never breaks Claude Code: the search and every model call are bounded (``[hooks]
recall_timeout``, ``flush_timeout``, ``slug_timeout``), whatever fails is one line in
:attr:`HookReply.notes` (the CLI prints them on stderr), and nothing here raises.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from memdir.clock import now
from memdir.deadline import run_with_timeout
from memdir.errors import MemdirError
from memdir.hooks.transcript import Transcript, read_transcript
from memdir.llm.base import LLM, Message, count_tokens
from memdir.llm.registry import chat_llm_choice, create_llm
from memdir.memory.context import recall_for, session_memory_context
from memdir.memory.facade import Memory
from memdir.workspace.fileio import atomic_write

#: Hook input on stdin beyond this many bytes is not read (a prompt is at most a few MB).
MAX_INPUT_BYTES = 16 * 1024 * 1024
#: Where per-session state is kept, under the workspace's state folder.
STATE_FOLDER = "claude-code"
SOURCE = "Claude Code"

LLMFactory = Callable[[Memory], LLM | None]
#: Opens a workspace's Memory for one hook (the service lends its warm one).
MemoryOpener = Callable[[Path], AbstractContextManager[Memory]]


@dataclass(frozen=True)
class HookInput:
    """The JSON Claude Code sends a hook (the fields memdir uses)."""

    event: str
    session_id: str
    transcript_path: Path | None
    cwd: str = ""
    source: str = ""
    prompt: str = ""
    trigger: str = ""
    reason: str = ""

    @classmethod
    def parse(cls, raw: str) -> HookInput:
        """Read the hook JSON.

        Raises:
            MemdirError: it is not a JSON object.
        """
        try:
            data = json.loads(raw) if raw.strip() else {}
        except ValueError as exc:
            raise MemdirError(f"the hook input is not JSON ({exc})") from exc
        if not isinstance(data, dict):
            raise MemdirError("the hook input is not a JSON object")
        transcript = _text(data, "transcript_path")
        return cls(
            event=_text(data, "hook_event_name"),
            session_id=_text(data, "session_id"),
            transcript_path=Path(transcript).expanduser() if transcript else None,
            cwd=_text(data, "cwd"),
            source=_text(data, "source"),
            prompt=_text(data, "prompt"),
            trigger=_text(data, "trigger"),
            reason=_text(data, "reason"),
        )


@dataclass
class HookReply:
    """What a hook hands back to Claude Code.

    Attributes:
        event: Claude Code's event name (``SessionStart``).
        context: additional context for the model (SessionStart, UserPromptSubmit).
        system_message: a line shown to the user.
        notes: what went wrong or was skipped, one line each (for stderr).
    """

    event: str
    context: str = ""
    system_message: str = ""
    notes: list[str] = field(default_factory=list)

    def stdout(self) -> str:
        """The JSON to print on stdout, or "" for nothing."""
        data: dict[str, Any] = {}
        if self.context:
            data["hookSpecificOutput"] = {
                "hookEventName": self.event,
                "additionalContext": self.context,
            }
        if self.system_message:
            data["systemMessage"] = self.system_message
        return json.dumps(data, ensure_ascii=False) if data else ""


def run_hook(
    command: str,
    raw_input: str,
    workspace: Path,
    *,
    llm_factory: LLMFactory | None = None,
    open_memory: MemoryOpener = Memory,
) -> HookReply:
    """Run the hook ``command`` (``session-start`` …) on ``workspace`` for Claude Code's input.

    Args:
        command: one of :data:`~memdir.hooks.claude_code.EVENT_COMMANDS`.
        raw_input: the JSON Claude Code wrote on stdin.
        workspace: the workspace named at install time.
        llm_factory: builds the model (default: ``[llm]`` of the workspace's config).
        open_memory: opens the workspace (default: a new :class:`Memory`, closed after).

    Returns:
        The reply; never raises (a failure becomes a note).
    """
    handler, event = _HANDLERS[command]
    reply = HookReply(event)
    try:
        hook = HookInput.parse(raw_input)
        if hook.event and hook.event != event:
            reply.notes.append(f"got {hook.event} input in the {event} hook; running {event}")
        with open_memory(workspace) as memory:
            handler(memory, hook, reply, llm_factory or _configured_llm)
    except MemdirError as exc:
        reply.notes.append(str(exc))
    except Exception as exc:  # a hook must never break Claude Code
        reply.notes.append(f"internal error: {type(exc).__name__}: {exc}")
    return reply


# -- the events -----------------------------------------------------------------------------


def _session_start(memory: Memory, hook: HookInput, reply: HookReply, _: LLMFactory) -> None:
    reply.context = session_memory_context(
        memory.workspace,
        now(),
        private=memory.scope == "private",
        max_chars=memory.config.hooks.session_start_chars,
    )


def _user_prompt_submit(memory: Memory, hook: HookInput, reply: HookReply, _: LLMFactory) -> None:
    settings = memory.config.hooks
    if not settings.recall:
        return
    search = partial(
        recall_for,
        memory,
        hook.prompt,
        limit=settings.recall_max_items,
        min_score=settings.recall_min_score,
        max_chars=settings.recall_max_chars,
    )
    try:
        recall = run_with_timeout(search, settings.recall_timeout, "auto-recall")
    except MemdirError as exc:  # the search goes on in the background; the prompt does not wait
        reply.notes.append(f"{exc} ([hooks] recall_timeout): skipped for this prompt")
        return
    if recall.warning:
        reply.notes.append(recall.warning)
    reply.context = recall.block


def _pre_compact(
    memory: Memory, hook: HookInput, reply: HookReply, llm_factory: LLMFactory
) -> None:
    state = SessionState.load(memory, hook.session_id)
    transcript = _transcript(hook, start_line=state.flushed_line)
    if not transcript.messages:
        reply.notes.append("memory flush: nothing new in the transcript since the last one")
        return
    llm = _llm(memory, llm_factory, reply, "memory flush")
    if llm is None:
        saved = _capture(memory, transcript, hook.session_id)
        reply.notes.append(f"memory flush: {saved} remembered statement(s) captured without it")
    elif not _flush(memory, transcript, llm, hook.session_id, reply):
        return  # the next compaction tries again from the same line
    state.flushed_line = transcript.lines
    state.save(memory)


def _session_end(
    memory: Memory, hook: HookInput, reply: HookReply, llm_factory: LLMFactory
) -> None:
    state = SessionState.load(memory, hook.session_id)
    transcript = _transcript(hook, start_line=0)
    dialogue = transcript.dialogue
    if len(dialogue) <= state.archived_messages:
        reply.notes.append("session archive: nothing new since the last one")
        return
    llm = _llm(memory, llm_factory, reply, "the archive's slug")
    settings = memory.config.hooks
    archived = memory.archive(
        dialogue,
        session_id=hook.session_id or "unknown",
        started_at=transcript.started_at or now(),
        llm=llm,
        source=f"{SOURCE} ({hook.reason or 'session end'})",
        slug_timeout=settings.slug_timeout,
    )
    state.archived_messages = len(dialogue)
    state.save(memory)
    if archived is not None:
        reply.notes.append(archived.summary("no LLM"))


_HANDLERS: dict[str, tuple[Callable[[Memory, HookInput, HookReply, LLMFactory], None], str]] = {
    "session-start": (_session_start, "SessionStart"),
    "user-prompt-submit": (_user_prompt_submit, "UserPromptSubmit"),
    "pre-compact": (_pre_compact, "PreCompact"),
    "session-end": (_session_end, "SessionEnd"),
}


# -- helpers ----------------------------------------------------------------------------------


def _flush(
    memory: Memory, transcript: Transcript, llm: LLM, session_id: str, reply: HookReply
) -> bool:
    """The memory flush over ``transcript``; False when the model failed."""
    settings = memory.config.hooks
    messages, cut = _recent(transcript.messages, settings.flush_input_tokens)
    if cut:
        reply.notes.append(
            f"memory flush: the model saw the last {len(messages)} of "
            f"{len(transcript.messages)} messages ([hooks] flush_input_tokens)"
        )
    result = memory.flush(
        messages,
        llm=llm,
        session=f"claude-code {session_id}",
        timeout=settings.flush_timeout,
    )
    reply.notes.extend(result.warnings)
    if result.error:
        reply.notes.append(result.error)
    elif result.appended:
        where = ", ".join(result.paths)
        reply.system_message = f"memdir: memory flush saved {result.appended} line(s) to {where}"
    return result.ok


def _capture(memory: Memory, transcript: Transcript, session_id: str) -> int:
    """Without a model: what the user plainly asked to be remembered (auto-capture's rules)."""
    capture = memory.capture(session=f"claude-code {session_id}")
    at = now()
    for message in transcript.messages:
        if message.role == "user":
            capture.consider(message.content, now=at)
    return sum(1 for result in capture.captured if result.written)


def _recent(messages: list[Message], max_tokens: int) -> tuple[list[Message], bool]:
    """The most recent ``messages`` within ``max_tokens``; whether older ones were left out."""
    kept: list[Message] = []
    used = 0
    for message in reversed(messages):
        cost = count_tokens(message.content) + 4
        if kept and used + cost > max_tokens:
            break
        kept.append(message)
        used += cost
    return list(reversed(kept)), len(kept) < len(messages)


def _transcript(hook: HookInput, *, start_line: int) -> Transcript:
    if hook.transcript_path is None:
        raise MemdirError("the hook input names no transcript_path")
    return read_transcript(hook.transcript_path, start_line=start_line)


def _configured_llm(memory: Memory) -> LLM | None:
    """The model ``memdir chat`` would use (``[llm]``, or the environment's endpoint)."""
    return create_llm(chat_llm_choice(memory.config).settings)


def _llm(memory: Memory, factory: LLMFactory, reply: HookReply, purpose: str) -> LLM | None:
    try:
        llm = factory(memory)
    except MemdirError as exc:
        reply.notes.append(f"no LLM for {purpose} ({exc})")
        return None
    if llm is None:
        reply.notes.append(f"no LLM for {purpose}: set [llm] in $MEMDIR_HOME/config.toml")
    return llm


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    return value if isinstance(value, str) else ""


# -- per-session state ----------------------------------------------------------------------

_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,80}$")


@dataclass
class SessionState:
    """What the hooks did for one Claude Code session (in ``.memdir/claude-code/<id>.json``).

    Attributes:
        session_id: Claude Code's session id.
        flushed_line: the transcript line the last memory flush read up to.
        archived_messages: user and assistant messages the last archive covered.
    """

    session_id: str
    flushed_line: int = 0
    archived_messages: int = 0

    @staticmethod
    def path(memory: Memory, session_id: str) -> Path:
        name = session_id if _SAFE_ID.match(session_id) else _digest(session_id)
        return memory.workspace.state_dir / STATE_FOLDER / f"{name}.json"

    @classmethod
    def load(cls, memory: Memory, session_id: str) -> SessionState:
        state = cls(session_id)
        with contextlib.suppress(OSError, ValueError, TypeError):
            data = json.loads(cls.path(memory, session_id).read_text(encoding="utf-8"))
            state.flushed_line = max(0, int(data.get("flushed_line", 0)))
            state.archived_messages = max(0, int(data.get("archived_messages", 0)))
        return state

    def save(self, memory: Memory) -> None:
        """Write the state (a failure is raised as a MemdirError)."""
        path = self.path(memory, self.session_id)
        data = {
            "session_id": self.session_id,
            "flushed_line": self.flushed_line,
            "archived_messages": self.archived_messages,
        }
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, json.dumps(data) + "\n")
        except OSError as exc:
            raise MemdirError(f"cannot keep the hook state in {path}: {exc.strerror}") from exc


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
