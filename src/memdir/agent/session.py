"""A chat session and its transcript, kept as JSON lines in ``.memdir/sessions/<id>.jsonl``.

The transcript is append-only machine state (not a memory file): a ``session`` header, then one
record per ``message``, and a ``compaction`` record whenever older turns were replaced by a
summary (it holds the summary and how many trailing messages were kept). A message record may
carry the native ``tool_calls`` of an assistant message (``id``, ``name``, ``arguments``), the
``tool_call_id`` a tool result answers, and ``interrupted: true`` for a reply the user stopped.
Replaying the records rebuilds the live history, so a session can be resumed or compacted
later (``memdir compact``).
"""

from __future__ import annotations

import json
import os
import secrets
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memdir import clock
from memdir.errors import MemdirError, WorkspaceError
from memdir.llm.base import ROLES, Message, ToolCall
from memdir.workspace.fileio import append_whole, read_regular_file

SESSIONS_DIR = "sessions"
FORMAT_VERSION = 1
#: User and assistant messages remembered for the archive and extraction, compactions aside.
DIALOGUE_MESSAGES = 200

#: A transcript is never appended through a symlink (a cloned `.memdir` could hold one).
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def sessions_dir(state_dir: Path) -> Path:
    """Where transcripts live: ``<workspace>/.memdir/sessions``."""
    return state_dir / SESSIONS_DIR


def new_session_id(now: datetime) -> str:
    """``YYYYMMDD-HHMMSS-xxxxxx``: sortable by start time, unique by a random suffix."""
    return f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


@dataclass
class Session:
    """One conversation: the live history (after the last compaction) and its transcript.

    Attributes:
        id: the session id (the transcript's file name without ``.jsonl``).
        path: the transcript file.
        started_at: when the session began (names its archive).
        scope: ``private`` or ``shared``.
        history: the messages still in the context, oldest first.
        summary: the summary of the turns compacted away, if any.
        compactions: how many compactions this session had.
        flushed_this_cycle: a memory flush already ran since the last compaction.
        user_turns: user messages since the session started.
        extracted_turns: ``user_turns`` when extraction last ran.
        live_bytes: transcript bytes written since the last compaction.
        dialogue: the last :data:`DIALOGUE_MESSAGES` user and assistant messages, including
            those compacted away (for the archive and extraction).
    """

    id: str
    path: Path
    started_at: datetime
    scope: str = "private"
    history: list[Message] = field(default_factory=list)
    summary: str | None = None
    compactions: int = 0
    flushed_this_cycle: bool = False
    user_turns: int = 0
    extracted_turns: int = 0
    live_bytes: int = 0
    dialogue: deque[Message] = field(default_factory=lambda: deque(maxlen=DIALOGUE_MESSAGES))
    _header: dict[str, Any] | None = field(default=None, repr=False)

    @classmethod
    def start(cls, state_dir: Path, *, now: datetime, scope: str = "private") -> Session:
        """Begin a new session (its transcript file appears with the first message)."""
        session_id = new_session_id(now)
        session = cls(session_id, sessions_dir(state_dir) / f"{session_id}.jsonl", now, scope)
        # Written with the first record, so a session left without a word leaves no file.
        session._header = {
            "type": "session",
            "version": FORMAT_VERSION,
            "id": session_id,
            "started_at": now.isoformat(timespec="seconds"),
            "scope": scope,
        }
        return session

    @classmethod
    def load(cls, state_dir: Path, session_id: str) -> Session:
        """Rebuild a session from its transcript; ``last`` means the most recent one.

        Raises:
            MemdirError: no such session, or its transcript cannot be read.
        """
        folder = sessions_dir(state_dir)
        if session_id == "last":
            found = latest_session_id(state_dir)
            if found is None:
                raise MemdirError(f"no saved chat session in {folder}: run `memdir chat` first")
            session_id = found
        if not session_id or any(c in session_id for c in "/\\.") or "\x00" in session_id:
            raise MemdirError(f"invalid session id {session_id!r}")
        path = folder / f"{session_id}.jsonl"
        try:
            raw = read_regular_file(path)
        except FileNotFoundError:
            raise MemdirError(
                f"no chat session {session_id!r} in {folder} (use `last` for the most recent)"
            ) from None
        except OSError as exc:
            raise MemdirError(f"cannot read {path}: {exc.strerror}") from exc
        session: Session | None = None
        for number, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                if number == len(raw.splitlines()):
                    break  # a last line cut short by a crash: ignore it
                raise MemdirError(f"{path}: line {number} is not JSON") from None
            session = _replay(session, record, session_id, path)
        if session is None:
            raise MemdirError(f"{path}: not a memdir chat transcript (no session header)")
        session.live_bytes = 0
        return session

    def add(self, message: Message, *, interrupted: bool = False) -> None:
        """Append a message to the history and the transcript (``interrupted``: a reply the
        user stopped, kept as far as it was shown)."""
        self._remember(message)
        record: dict[str, Any] = {"type": "message", "role": message.role}
        record["content"] = message.content
        if message.tool_calls:
            record["tool_calls"] = [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
            ]
        if message.tool_call_id:
            record["tool_call_id"] = message.tool_call_id
        if interrupted:
            record["interrupted"] = True
        self._append(record)

    def _remember(self, message: Message) -> None:
        self.history.append(message)
        if message.role in ("user", "assistant"):
            self.dialogue.append(message)
        if message.role == "user":
            self.user_turns += 1

    def apply_compaction(self, summary: str, kept: list[Message]) -> None:
        """Replace the history by ``kept`` under a new ``summary``; a new cycle begins."""
        self.summary = summary
        self.history = list(kept)
        self.compactions += 1
        self.flushed_this_cycle = False
        self._append({"type": "compaction", "summary": summary, "kept": len(kept)})
        self.live_bytes = 0

    def mark_flushed(self, appended: int) -> None:
        """Record that this cycle's memory flush ran."""
        self.flushed_this_cycle = True
        self._append({"type": "flush", "appended": appended})

    def mark_extracted(self) -> None:
        """Record that the session so far went through extraction."""
        self.extracted_turns = self.user_turns
        self._append({"type": "extraction", "user_turns": self.user_turns})

    def _append(self, record: dict[str, Any]) -> None:
        """Append ``record`` (after the header, if that is still to be written).

        Raises:
            WorkspaceError: the transcript cannot be written.
        """
        records = [self._header, record] if self._header is not None else [record]
        stamp = clock.now().isoformat(timespec="seconds")
        data = "".join(
            json.dumps({**r, "ts": r.get("ts", stamp)}, ensure_ascii=False) + "\n"
            for r in records
            if r is not None
        ).encode("utf-8")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _O_NOFOLLOW, 0o600)
            try:
                append_whole(fd, data, self.path)  # whole records, or none
            finally:
                os.close(fd)
        except OSError as exc:
            raise WorkspaceError(
                f"cannot write the chat transcript {self.path}: {exc.strerror}"
            ) from exc
        self._header = None
        self.live_bytes += len(data)


def latest_session_id(state_dir: Path) -> str | None:
    """The id of the most recently started session, or None."""
    folder = sessions_dir(state_dir)
    try:
        names = sorted(p.stem for p in folder.glob("*.jsonl") if p.is_file())
    except OSError:
        return None
    return names[-1] if names else None


def _replay(session: Session | None, record: Any, session_id: str, path: Path) -> Session | None:
    if not isinstance(record, dict):
        return session
    kind = record.get("type")
    if kind == "session":
        started = datetime.fromisoformat(str(record.get("started_at")))
        return Session(session_id, path, started, str(record.get("scope") or "private"))
    if session is None:
        return None
    if kind == "message" and record.get("role") in ROLES and isinstance(record.get("content"), str):
        session._remember(_message(record))
    elif kind == "compaction" and isinstance(record.get("summary"), str):
        kept = int(record.get("kept") or 0)
        session.history = session.history[len(session.history) - kept :] if kept else []
        session.summary = record["summary"]
        session.compactions += 1
        session.flushed_this_cycle = False
    elif kind == "flush":
        session.flushed_this_cycle = True
    elif kind == "extraction":
        session.extracted_turns = session.user_turns
    return session


def _message(record: dict[str, Any]) -> Message:
    """A message record back as a :class:`Message`; malformed tool fields are dropped."""
    role = record["role"]
    calls = tuple(
        ToolCall(str(c["id"]), str(c["name"]), str(c.get("arguments") or "{}"))
        for c in record.get("tool_calls") or []
        if isinstance(c, dict) and c.get("id") and c.get("name")
    )
    call_id = record.get("tool_call_id")
    return Message(
        role,
        record["content"],
        tool_calls=calls if role == "assistant" else (),
        tool_call_id=str(call_id) if call_id and role == "tool" else "",
    )
