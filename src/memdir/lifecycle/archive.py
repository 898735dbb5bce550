"""Session archive on ``/new``: the end of a conversation saved as a note
(docs/design.md#lifecycle).

The last :data:`ARCHIVE_MESSAGES` user and assistant messages go to
``memory/<session date>-<slug>.md`` under a header with the date, session id and source. The
slug comes from the LLM (one or two lowercase words, sanitised, at most 30 characters, within
15 s) or, failing that, is the session's start time ``HHMM``. An existing file is never
overwritten (``-2``, ``-3``… are added) and an empty conversation writes nothing. The file is
written through the audit seam (:func:`memdir.audit.write_text`: an atomic replace under the
memory write lock, recorded as an ``archive`` commit or log line), after checking the name is
free, so the archive is created whole or not at all.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memdir.audit import audited, write_text
from memdir.audit.seam import plural
from memdir.errors import MemdirError, WorkspaceError
from memdir.llm.base import LLM, Message, complete_within
from memdir.llm.prompts import load_prompt
from memdir.safety.privacy import describe_kinds
from memdir.safety.untrusted import escape_untrusted
from memdir.workspace.layout import MEMORY_DIR, Workspace

ARCHIVE_MESSAGES = 15
SLUG_TIMEOUT_S = 15.0
MAX_SLUG_CHARS = 30
MAX_SLUG_WORDS = 2
#: How much of the conversation the slug model sees (characters, most recent last).
SLUG_INPUT_CHARS = 2_000
#: Names tried before giving up: ``slug``, ``slug-2`` … ``slug-99``.
MAX_SUFFIX = 99

_WORD_RE = re.compile(r"[a-z0-9]+")
_LABEL_RE = re.compile(r"^\s*(?:slug|name|file ?name)\s*[:=]\s*", re.I)


@dataclass(frozen=True)
class ArchiveResult:
    """Where a session was archived.

    Attributes:
        path: workspace-relative path (``memory/2026-11-30-redis-port.md``).
        slug: the slug used (the LLM's, or ``HHMM``).
        from_llm: the slug came from the LLM (False: the time fallback).
        messages: how many messages were written.
        note: why the fallback was used, when it was; what secrets were redacted.
    """

    path: str
    slug: str
    from_llm: bool
    messages: int
    note: str = ""

    def summary(self, fallback: str) -> str:
        """One line saying where the session went (and, for a time slug, why: ``note``, else
        ``fallback``)."""
        how = "" if self.from_llm else f" (time slug: {self.note or fallback})"
        return f"archived {self.messages} messages to {self.path}{how}"


def sanitise_slug(raw: str) -> str | None:
    """Turn a model's answer into 1–2 lowercase ASCII words joined by ``-``, ≤ 30 chars.

    Returns:
        The slug, or None when nothing usable is left (e.g. an answer in Chinese).
    """
    first_line = next((line for line in raw.strip().splitlines() if line.strip()), "")
    first_line = _LABEL_RE.sub("", first_line.strip().strip("`'\"*_ "))
    folded = unicodedata.normalize("NFKD", first_line).casefold()
    words = _WORD_RE.findall(folded.encode("ascii", "ignore").decode("ascii"))[:MAX_SLUG_WORDS]
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > MAX_SLUG_CHARS:
            break
        slug = candidate
    if not slug and words:
        slug = words[0][:MAX_SLUG_CHARS]
    return slug or None


def archive_messages(messages: Sequence[Message], limit: int = ARCHIVE_MESSAGES) -> list[Message]:
    """The last ``limit`` user and assistant messages that have text."""
    kept = [m for m in messages if m.role in ("user", "assistant") and m.content.strip()]
    return kept[-limit:] if limit > 0 else []


def suggest_slug(llm: LLM, messages: Sequence[Message], *, timeout: float) -> str:
    """Ask ``llm`` for a slug, waiting at most ``timeout`` seconds in all (a provider that
    retries past its own timeout cannot hold ``/new`` up).

    Raises:
        MemdirError: the provider failed or did not answer in time.
    """
    excerpt = "\n\n".join(f"{m.role}: {m.content}" for m in messages)[-SLUG_INPUT_CHARS:]
    # Memory is data here too (docs/design.md#working-memory): nothing closes the fence.
    request = [Message("user", f"<conversation>\n{escape_untrusted(excerpt)}\n</conversation>")]
    return complete_within(
        llm, request, system=load_prompt("archive_slug"), max_tokens=16, timeout=timeout
    )


def archive_session(
    workspace: Workspace,
    messages: Sequence[Message],
    *,
    session_id: str,
    started_at: datetime,
    now: datetime,
    llm: LLM | None,
    source: str = "memdir chat",
    limit: int = ARCHIVE_MESSAGES,
    slug_timeout: float = SLUG_TIMEOUT_S,
) -> ArchiveResult | None:
    """Write the last ``limit`` messages of a session to ``memory/<date>-<slug>.md``.

    Args:
        workspace: the workspace.
        messages: the session's messages, oldest first (tool messages are left out).
        session_id: recorded in the header.
        started_at: the session's start (its date names the file; its time is the fallback).
        now: when the archive is written (recorded in the header).
        llm: names the archive; None uses the time fallback.
        source: what the conversation was (recorded in the header).
        limit: how many messages to keep.
        slug_timeout: seconds allowed for the slug.

    Returns:
        Where it was written, or None when there was nothing to archive.

    Raises:
        WorkspaceError: the file cannot be written (or 99 archives of that name exist).
    """
    kept = archive_messages(messages, limit)
    if not kept:
        return None
    slug: str | None = None
    note = ""
    if llm is not None:
        try:
            slug = sanitise_slug(suggest_slug(llm, kept, timeout=slug_timeout))
            if slug is None:
                note = "the model's slug had no usable words"
        except MemdirError as exc:
            note = f"no slug from the model ({exc})"
    from_llm = slug is not None
    if slug is None:
        slug = started_at.strftime("%H%M")
    day = started_at.date().isoformat()
    text = _render(kept, session_id=session_id, started_at=started_at, now=now, source=source)
    # A transcript is a bulk write: secrets are redacted even with [privacy] secrets = "refuse".
    text, redacted = workspace.secrets.redact(text)
    if redacted:
        note = "; ".join(filter(None, [note, f"redacted {describe_kinds(redacted)}"]))
    folder = workspace.root / MEMORY_DIR
    with audited(workspace, "archive", session=session_id) as op:
        try:
            for n in range(1, MAX_SUFFIX + 1):
                name = f"{day}-{slug}.md" if n == 1 else f"{day}-{slug}-{n}.md"
                if not os.path.lexists(folder / name):
                    op.describe(
                        f"session {session_id[:8]}… ({plural(len(kept), 'message')}) "
                        f"to {MEMORY_DIR}/{name}"
                    )
                    write_text(workspace, f"{MEMORY_DIR}/{name}", text)
                    return ArchiveResult(f"{MEMORY_DIR}/{name}", slug, from_llm, len(kept), note)
        except OSError as exc:
            raise WorkspaceError(f"cannot write the session archive: {exc.strerror}") from exc
    raise WorkspaceError(
        f"{MAX_SUFFIX} archives named {MEMORY_DIR}/{day}-{slug}*.md exist already: "
        "move some away and run /new again"
    )


@dataclass(frozen=True)
class ArchiveHeader:
    """What a session archive's header records (see :func:`read_archive_header`)."""

    date: str  # when the session started, YYYY-MM-DD HH:MM
    session: str
    source: str
    archived: str  # when it was archived, YYYY-MM-DD HH:MM
    messages: str


_HEADER_FIELD = re.compile(r"^- (date|session|source|archived|messages): (.*)$")


def read_archive_header(text: str) -> ArchiveHeader | None:
    """The header fields of an archive written by :func:`archive_session`, or None when
    ``text`` does not start like one (a person's note named like an archive)."""
    lines = text.split("\n", 12)
    if not lines or not lines[0].startswith("# Session "):
        return None
    fields: dict[str, str] = {}
    for line in lines[1:]:
        if line.startswith("## "):
            break
        match = _HEADER_FIELD.match(line.rstrip("\r"))
        if match:
            fields[match.group(1)] = match.group(2).strip()
    if "archived" not in fields:
        return None
    return ArchiveHeader(
        date=fields.get("date", ""),
        session=fields.get("session", ""),
        source=fields.get("source", ""),
        archived=fields["archived"],
        messages=fields.get("messages", ""),
    )


def _render(
    kept: list[Message], *, session_id: str, started_at: datetime, now: datetime, source: str
) -> str:
    lines = [
        f"# Session {started_at:%Y-%m-%d %H:%M}",
        "",
        f"- date: {started_at:%Y-%m-%d %H:%M}",
        f"- session: {session_id}",
        f"- source: {source}",
        f"- archived: {now:%Y-%m-%d %H:%M}",
        f"- messages: the last {len(kept)}",
        "",
        "## Conversation",
        "",
    ]
    for message in kept:
        lines.append(f"**{message.role}:**")
        lines.append(message.content.strip())
        lines.append("")
    return "\n".join(lines)
