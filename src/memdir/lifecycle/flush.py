"""Pre-compaction memory flush: one silent turn that may only append to today's daily log.

Before older turns are summarised away (docs/design.md#lifecycle), the model gets one chance to
save what matters.
It sees the conversation plus the ``flush`` prompt and answers either ``NO_REPLY`` or the lines
to keep. It has no tools and no file access: memdir itself appends each line to
``memory/YYYY-MM-DD.md`` through the shared writer (:func:`~memdir.lifecycle.write.write_memory`,
which skips duplicates), so no other file can be touched whatever the model says. The lines are
checked for secrets together before the first is written (:mod:`memdir.safety.privacy`), so a
private key the model copied over several lines is redacted whole.

Memory is data here too: the conversation's tool results (where recalled memory comes back)
are escaped with :func:`~memdir.safety.untrusted.escape_untrusted` before the model reads them, and
a line of the answer that reads like a prompt injection
(:func:`~memdir.safety.untrusted.looks_like_injection`) is not written but reported, so a note that
tries to plant instructions is not copied into the log for the next session to read.

When to flush is the caller's business (:func:`flush_due`, once per compaction cycle); this
module runs the turn.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from memdir.audit import audited
from memdir.audit.seam import from_session, plural
from memdir.errors import MemdirError
from memdir.lifecycle.compact import compaction_budget
from memdir.lifecycle.write import WriteResult, write_memory
from memdir.llm.base import LLM, Message, complete_within
from memdir.llm.prompts import load_prompt
from memdir.safety.privacy import refusal
from memdir.safety.untrusted import escape_untrusted, looks_like_injection, preview
from memdir.workspace.layout import MEMORY_DIR, Workspace

NO_REPLY = "NO_REPLY"
#: Tokens before the compaction budget at which the flush runs (OpenClaw's soft threshold).
SOFT_THRESHOLD_TOKENS = 4_000
#: A live transcript this large (bytes since the last compaction) triggers a flush as well.
TRANSCRIPT_FLUSH_BYTES = 2 * 1024 * 1024
#: At most this many new lines are appended from one flush (lines the log already has, which
#: the writer skips, do not count); the rest are dropped with a warning.
MAX_FLUSH_LINES = 20
#: A reply longer than this many lines is not read further.
MAX_FLUSH_SCAN = 100

_FENCE_RE = re.compile(r"^\s*(`{3,}|~{3,})")
_MARKER_RE = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")


@dataclass
class FlushResult:
    """What a memory flush wrote.

    Attributes:
        ok: the model answered (False: ``error`` says why; nothing was written).
        no_reply: the model answered ``NO_REPLY``.
        written: the lines appended to the daily log (duplicates are reported, not written).
        refused: lines that read like a prompt injection: not written (each is a warning too).
        warnings: lines that could not be written, and why.
        error: the provider failure, when not ``ok``.
    """

    ok: bool
    no_reply: bool = False
    written: list[WriteResult] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def appended(self) -> int:
        return sum(1 for result in self.written if result.written)

    @property
    def paths(self) -> list[str]:
        """The files the lines went to (or were found in already), sorted."""
        return sorted({result.path for result in self.written})


def flush_threshold(context_window: int, max_output_tokens: int) -> int:
    """Tokens at which the flush runs: the compaction budget minus a soft margin.

    With the defaults that is ``context_window − 20,000 − 4,000``; a small window scales the
    margin down (a twentieth of the window) so the flush still comes before compaction.
    """
    soft = min(SOFT_THRESHOLD_TOKENS, context_window // 20)
    return max(1, compaction_budget(context_window, max_output_tokens) - soft)


def flush_due(
    tokens: int,
    transcript_bytes: int,
    *,
    context_window: int,
    max_output_tokens: int,
    flushed_this_cycle: bool,
) -> bool:
    """Whether a flush should run now: not yet this cycle, and the context (or the live
    transcript) is past its threshold."""
    if flushed_this_cycle:
        return False
    return (
        tokens >= flush_threshold(context_window, max_output_tokens)
        or transcript_bytes >= TRANSCRIPT_FLUSH_BYTES
    )


def parse_flush_reply(reply: str) -> list[str] | None:
    """The lines to append from a flush answer, or None for ``NO_REPLY``.

    List markers and code fences are dropped; a line that is only ``NO_REPLY``, or a JSON tool
    request (the flush turn has no tools), is ignored.
    """
    text = reply.strip()
    if not text or text.strip("`* ").upper() == NO_REPLY:
        return None
    lines = []
    for raw in text.splitlines():
        if _FENCE_RE.match(raw):
            continue
        line = _MARKER_RE.sub("", raw).strip()
        if not line or line.strip("`* ").upper() == NO_REPLY:
            continue
        if line.startswith("{") and '"tool"' in line:
            continue  # no tools in this turn: a tool request is not a note
        lines.append(line.lstrip("#").strip() if line.startswith("#") else line)
    return [line for line in lines if line] or None


def run_memory_flush(
    workspace: Workspace,
    messages: Sequence[Message],
    llm: LLM,
    *,
    now: datetime,
    system: str | None = None,
    max_tokens: int | None = None,
    session: str | None = None,
    timeout: float | None = None,
) -> FlushResult:
    """Run the silent flush turn over ``messages`` and append its lines to today's log.

    Args:
        workspace: where the daily log is.
        messages: the live conversation (the flush prompt is added as the last user message).
        llm: the model.
        now: its date names the daily log.
        system: the system prompt of the conversation, sent unchanged.
        max_tokens: the reply limit (None: the provider's setting).
        session: the chat session's id, for the audit record (``flush: 3 facts from session
            7f3c…``).
        timeout: seconds the model may take in all, retries included (None: the provider's
            own timeout and retries).

    Returns:
        What was written; a provider failure gives ``ok=False`` (nothing written, no raise).
    """
    day = now.date().isoformat()
    daily_log = f"{MEMORY_DIR}/{day}.md"
    prompt = load_prompt("flush").replace("{{daily_log}}", daily_log).replace("{{date}}", day)
    request = [*(_as_data(m) for m in messages), Message("user", prompt)]
    try:
        if timeout is None:
            reply = llm.complete(request, system=system, max_tokens=max_tokens)
        else:
            reply = complete_within(
                llm, request, system=system, max_tokens=max_tokens, timeout=timeout
            )
    except MemdirError as exc:
        return FlushResult(False, error=f"memory flush failed: {exc}")
    lines = parse_flush_reply(reply)
    if lines is None:
        return FlushResult(True, no_reply=True)
    result = FlushResult(True)
    with audited(workspace, "flush", session=session) as op:
        _append_lines(workspace, lines, now, result)
        op.describe(plural(result.appended, "fact") + from_session(session))
    result.warnings.extend(op.warnings)
    return result


def _as_data(message: Message) -> Message:
    """A tool result escaped like any memory text; other messages as they are."""
    if message.role != "tool":
        return message
    return replace(message, content=escape_untrusted(message.content))


def _append_lines(
    workspace: Workspace, lines: list[str], now: datetime, result: FlushResult
) -> None:
    guard = workspace.secrets
    # The lines are checked together before any is written: a secret that runs over several
    # lines (a PEM private key) is one secret, and none of its lines may slip through alone.
    # The injection check then reads the redacted lines, so a refused line reported in a
    # warning shows no secret either.
    checked = guard.redact_lines(lines[:MAX_FLUSH_SCAN])
    for n, (line, kinds) in enumerate(checked):
        if looks_like_injection(line):
            result.refused.append(line)
            result.warnings.append(
                f"memory flush: a line that reads like a prompt injection was not written: "
                f"{preview(line)}"
            )
            continue
        if result.appended >= MAX_FLUSH_LINES:
            result.warnings.append(
                f"memory flush: stopped after {MAX_FLUSH_LINES} new lines; "
                f"{len(lines) - n} more were not written"
            )
            return
        if kinds and guard.action == "refuse":
            result.warnings.append(f"memory flush: a line was not written: {refusal(kinds)}")
            continue
        if not line.strip():
            continue  # the line was all secret (the body of a key): its marker is on another
        try:
            written = write_memory(workspace, line, target="daily", now=now, redacted=kinds)
        except MemdirError as exc:
            result.warnings.append(f"memory flush: a line was not written: {exc}")
            continue
        result.written.append(written)
    if len(lines) > MAX_FLUSH_SCAN:
        result.warnings.append(
            f"memory flush: only the first {MAX_FLUSH_SCAN} of {len(lines)} lines were read"
        )
