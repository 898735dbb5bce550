"""Which chat servers refused native tool calling, remembered across sessions.

When a server refuses the ``tools`` of a request (see
:func:`~memdir.llm.chat.check_tools_refusal`), the chat agent falls back to its text protocol
and records the refusal here, so the next session does not try again: one entry per provider,
base URL and model in ``$MEMDIR_HOME/chat-tools.json`` (user state, never in a workspace)::

    {"version": 1, "refusals": [{"provider": "openai", "base_url": "http://127.0.0.1:11434/v1",
      "model": "gemma:2b", "since": "2026-11-30T09:00:00", "reason": "HTTP 400: …"}]}

``memdir status`` lists the entries; ``memdir chat --tools native`` tries native tools again and
forgets the entry once they work. A file that cannot be read counts as empty (the only cost
is one refused request).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memdir.config.settings import memdir_home
from memdir.errors import WorkspaceError
from memdir.llm.base import LLM
from memdir.workspace.fileio import atomic_write

FILE_NAME = "chat-tools.json"
FORMAT_VERSION = 1
#: How much of the server's words an entry keeps.
REASON_CHARS = 300


@dataclass(frozen=True)
class ToolRefusal:
    """A server that refused native tools for one model."""

    provider: str
    base_url: str
    model: str
    since: str
    reason: str

    @property
    def where(self) -> str:
        """``provider · base URL · model`` for messages."""
        return " · ".join(part for part in (self.provider, self.base_url, self.model) if part)


def support_file() -> Path:
    """Where the refusals are kept: ``$MEMDIR_HOME/chat-tools.json``."""
    return memdir_home() / FILE_NAME


def tool_refusals() -> list[ToolRefusal]:
    """Every remembered refusal, oldest first."""
    try:
        data = json.loads(support_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    entries = data.get("refusals") if isinstance(data, dict) else None
    return [
        ToolRefusal(**{k: str(entry[k]) for k in _FIELDS})
        for entry in (entries if isinstance(entries, list) else [])
        if isinstance(entry, dict) and all(k in entry for k in _FIELDS)
    ]


def refusal_for(llm: LLM) -> ToolRefusal | None:
    """The remembered refusal for ``llm``'s provider, base URL and model, if any."""
    key = _key(llm)
    return next((r for r in tool_refusals() if _key_of(r) == key), None)


def remember_refusal(llm: LLM, reason: str, *, now: datetime) -> ToolRefusal:
    """Record that ``llm``'s server refused native tools (replacing an older entry).

    Raises:
        WorkspaceError: the file cannot be written.
    """
    provider, base_url, model = _key(llm)
    refusal = ToolRefusal(
        provider,
        base_url,
        model,
        now.isoformat(timespec="seconds"),
        " ".join(reason.split())[:REASON_CHARS],
    )
    _save([*(r for r in tool_refusals() if _key_of(r) != _key(llm)), refusal])
    return refusal


def forget_refusal(llm: LLM) -> bool:
    """Drop the entry for ``llm`` (its server took native tools after all); True if there was
    one.

    Raises:
        WorkspaceError: the file cannot be written.
    """
    kept = [r for r in tool_refusals() if _key_of(r) != _key(llm)]
    if len(kept) == len(tool_refusals()):
        return False
    _save(kept)
    return True


_FIELDS = ("provider", "base_url", "model", "since", "reason")


def _key(llm: LLM) -> tuple[str, str, str]:
    return (llm.name, str(getattr(llm, "base_url", "") or ""), llm.model)


def _key_of(refusal: ToolRefusal) -> tuple[str, str, str]:
    return (refusal.provider, refusal.base_url, refusal.model)


def _save(refusals: list[ToolRefusal]) -> None:
    path = support_file()
    data: dict[str, Any] = {
        "version": FORMAT_VERSION,
        "refusals": [asdict(r) for r in refusals],
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise WorkspaceError(f"cannot write {path}: {exc.strerror or exc}") from exc
