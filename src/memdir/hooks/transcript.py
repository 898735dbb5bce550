"""Reading a Claude Code session transcript (the JSONL file a hook's ``transcript_path`` names).

Each line is one JSON object. The conversation is in the lines of ``type`` ``user`` and
``assistant``: ``message.content`` is a string or a list of blocks (``text``, ``tool_use``,
``tool_result``, ``thinking``, ``image`` …). Claude Code writes each block of one assistant
reply as its own line (same ``message.id``); those are joined again. Left out: lines of other
types (attachments, queue operations, summaries, system lines), subagent lines
(``isSidechain``), Claude Code's own meta lines (``isMeta``), the summary a compaction put at
the start (``isCompactSummary``: its facts were flushed at that compaction), Claude Code's own
error replies written as assistant lines ("Not logged in · Please run /login":
``isApiErrorMessage``, or the model ``<synthetic>`` with an ``error``; no one said them, so no
archive or flush keeps them), slash-command echoes, ``<system-reminder>`` blocks and thinking.

Tool calls and results are kept short (a tool result becomes a ``tool`` message), so a
transcript full of file contents still fits a flush prompt. A line that is not valid JSON is
skipped and counted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memdir.errors import MemdirError, PathNotAllowed
from memdir.llm.base import Message
from memdir.workspace.fileio import open_regular

#: A tool call's arguments and a tool result are cut to this many characters.
TOOL_CALL_CHARS = 300
TOOL_RESULT_CHARS = 600
#: One message's text is cut to this many characters (its start is kept).
MESSAGE_CHARS = 20_000
#: User text that is Claude Code's own echo of a slash command or its output.
_COMMAND_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
)
_REMINDER_RE = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)


@dataclass
class Transcript:
    """The conversation of a transcript from some line on.

    Attributes:
        messages: user, assistant and tool messages, oldest first.
        lines: how many lines the file has (where the next read starts).
        started_at: the time of its first line, as local time (None: no timestamp seen).
        skipped: lines that were not valid JSON.
    """

    messages: list[Message] = field(default_factory=list)
    lines: int = 0
    started_at: datetime | None = None
    skipped: int = 0

    @property
    def dialogue(self) -> list[Message]:
        """The user and assistant messages (no tool results), for an archive."""
        return [m for m in self.messages if m.role in ("user", "assistant")]


def read_transcript(path: Path, *, start_line: int = 0) -> Transcript:
    """The conversation in Claude Code's transcript at ``path``, from line ``start_line`` on
    (0-based; earlier lines are only counted).

    Raises:
        MemdirError: the file cannot be read.
    """
    out = Transcript()
    last_id: str | None = None
    try:
        fd = open_regular(path)  # not a FIFO or a device: a hook never blocks on one
    except PathNotAllowed as exc:
        raise MemdirError(f"the transcript {path} is not a regular file") from exc
    except OSError as exc:
        raise MemdirError(f"cannot read the transcript {path}: {exc.strerror}") from exc
    try:
        with open(fd, encoding="utf-8", errors="replace") as fh:
            for number, raw in enumerate(fh):
                out.lines = number + 1
                if out.started_at is not None and number < start_line:
                    continue
                try:
                    entry = json.loads(raw)
                except ValueError:
                    out.skipped += number >= start_line
                    continue
                if not isinstance(entry, dict):
                    continue
                if out.started_at is None:
                    out.started_at = _local_time(entry.get("timestamp"))
                if number < start_line:
                    continue
                message = _message(entry)
                if message is None:
                    continue
                reply_id = _reply_id(entry)
                previous = out.messages[-1] if out.messages else None
                if (
                    reply_id is not None
                    and reply_id == last_id
                    and previous is not None
                    and previous.role == "assistant"
                ):
                    joined = f"{previous.content}\n{message.content}"
                    out.messages[-1] = Message("assistant", joined)
                else:
                    out.messages.append(message)
                last_id = reply_id
    except OSError as exc:
        raise MemdirError(f"cannot read the transcript {path}: {exc.strerror}") from exc
    return out


def _client_error(entry: dict[str, Any]) -> bool:
    """Whether an assistant line is Claude Code's own error reply, not the model's words."""
    if entry.get("type") != "assistant":
        return False
    if entry.get("isApiErrorMessage"):
        return True
    message = entry.get("message")
    model = message.get("model") if isinstance(message, dict) else None
    return model == "<synthetic>" and bool(entry.get("error"))


def _message(entry: dict[str, Any]) -> Message | None:
    kind = entry.get("type")
    if kind not in ("user", "assistant") or not isinstance(entry.get("message"), dict):
        return None
    if entry.get("isSidechain") or entry.get("isMeta") or entry.get("isCompactSummary"):
        return None
    if _client_error(entry):
        return None
    content = entry["message"].get("content")
    if kind == "user" and _only_tool_results(content):
        text = _render(content)
        return Message("tool", text) if text else None
    text = _render(content)
    if not text or (kind == "user" and text.startswith(_COMMAND_PREFIXES)):
        return None
    return Message(kind, text)


def _render(content: Any) -> str:
    """A message's content as plain text."""
    if isinstance(content, str):
        return _clean(content)
    if not isinstance(content, list):
        return ""
    parts = [_block(block) for block in content if isinstance(block, dict)]
    return _clean("\n".join(p for p in parts if p))


def _block(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_use":
        arguments = json.dumps(block.get("input", {}), ensure_ascii=False)
        return f"[tool call {block.get('name', '?')}: {_cut(arguments, TOOL_CALL_CHARS)}]"
    if kind == "tool_result":
        body = _render(block.get("content", ""))
        failed = " (error)" if block.get("is_error") else ""
        return f"[tool result{failed}: {_cut(body, TOOL_RESULT_CHARS)}]"
    if kind in ("image", "document"):
        return f"[{kind}]"
    return ""  # thinking, redacted thinking, and kinds this version does not know


def _only_tool_results(content: Any) -> bool:
    return (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def _clean(text: str) -> str:
    return _cut(_REMINDER_RE.sub("", text).strip(), MESSAGE_CHARS)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " […]"


def _reply_id(entry: dict[str, Any]) -> str | None:
    if entry.get("type") != "assistant":
        return None
    value = entry["message"].get("id")
    return value if isinstance(value, str) else None


def _local_time(value: Any) -> datetime | None:
    """An ISO timestamp (``2026-12-02T00:52:48.031Z``) as local naive time, like
    :func:`memdir.clock.now`."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed.astimezone().replace(tzinfo=None) if parsed.tzinfo else parsed
