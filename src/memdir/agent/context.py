"""What the chat agent sends each turn (docs/design.md#working-memory): the system prompt, the
user message with its recall block, the compaction summary.

The parts it shares with Claude Code's hooks — the bootstrap files and their caps, the daily
notes, the auto-recall block — are assembled in :mod:`memdir.memory.context`; this module puts
them together for the chat: the chat instructions and the memory tools first, then AGENTS.md
(the persona the owner writes: instructions, outside any fence), USER.md and MEMORY.md inside
``<memdir-memory>`` as data, and the session-start daily notes. The compaction summary is the
conversation's first message (:func:`summary_message`), escaped like the rest.
"""

from __future__ import annotations

from collections.abc import Sequence

from memdir.llm.base import Message
from memdir.llm.prompts import load_prompt
from memdir.memory.context import DATA_NOTE, Recall, bootstrap_sections, file_section
from memdir.safety.untrusted import escape_untrusted
from memdir.tools import ToolSpec
from memdir.workspace.layout import AGENTS_FILE, Workspace

__all__ = [
    "INSTRUCTION_FILES",
    "build_system_prompt",
    "summary_message",
    "with_recall",
]

#: The bootstrap files that instruct the agent (the owner's persona file); the others are data.
INSTRUCTION_FILES = frozenset({AGENTS_FILE})
_MEMORY_NOTE = f"What you know about the user and the work, to rely on. {DATA_NOTE}"


def with_recall(message: str, recall: Recall) -> str:
    """The user message as sent to the model: the recall block (if any) before it."""
    return f"{recall.block}\n\n{message}" if recall.block else message


def build_system_prompt(
    workspace: Workspace,
    *,
    private: bool,
    tools: Sequence[ToolSpec],
    daily_notes: str = "",
    max_tool_calls: int = 4,
    native_tools: bool = False,
) -> str:
    """The system prompt: the chat instructions, the bootstrap files and the session-start daily
    notes, in that order.

    ``tools`` are the memory tools of the contract (:func:`memdir.tools.memory_tools`). With
    ``native_tools`` their definitions go with each request and the prompt only names them;
    otherwise it teaches the text protocol's JSON line and lists each tool's arguments and
    description.
    """
    files = bootstrap_sections(workspace, private=private)
    names = [name for name, _ in files if name not in INSTRUCTION_FILES]
    if native_tools:
        section = load_prompt("chat_tools_native").replace(
            "{{tool_names}}", ", ".join(spec.name for spec in tools)
        )
    else:
        listing = "\n".join(f"- {t.name} {t.signature()}: {t.description}" for t in tools)
        section = load_prompt("chat_tools_text").replace("{{tool_list}}", listing)
    preamble = (
        load_prompt("chat")
        .replace("{{tools_section}}", section.strip())
        .replace("{{memory_files}}", _memory_files_sentence(names))
        .replace("{{max_tool_calls}}", str(max_tool_calls))
    )
    parts = [preamble.strip()]
    parts += [file_section(name, text) for name, text in files if name in INSTRUCTION_FILES]
    data = [file_section(name, text) for name, text in files if name not in INSTRUCTION_FILES]
    if data:
        body = "\n\n".join(data)
        parts.append(f"<memdir-memory>\n{_MEMORY_NOTE}\n\n{body}\n</memdir-memory>")
    if daily_notes:
        parts.append(f"# Recent daily notes\n\n{daily_notes}")
    return "\n\n".join(parts) + "\n"


def _memory_files_sentence(names: Sequence[str]) -> str:
    """What the preamble says of the data files the prompt holds ("" when it holds none)."""
    if not names:
        return ""
    listed = " and ".join(names)
    return f" Then {listed}, inside <memdir-memory>: what you know about the user and the work."


def summary_message(summary: str) -> Message:
    """The compaction summary as the conversation's first message.

    A user message, not part of the system prompt: it was written from the conversation and
    its tool results, so it carries no more authority than they did; escaped like them, so
    that it cannot close its block either.
    """
    return Message(
        "user",
        "<conversation-summary>\nThe older turns of this conversation were compacted into this "
        "summary; the recent turns follow.\n\n"
        f"{escape_untrusted(summary.strip())}\n</conversation-summary>",
    )
