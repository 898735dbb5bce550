"""Compaction: replace the older turns of a conversation with an LLM summary
(docs/design.md#lifecycle).

The last :data:`KEEP_USER_TURNS` user turns, and everything after the first of them, stay word
for word; everything before (and the previous summary, if there is one) is summarised under five
headings (:data:`SUMMARY_HEADINGS`). The model is asked for at most 15% of the summarised tokens;
the ratio it achieved is measured and reported.

Identifiers are not left to the model: :func:`find_identifiers` collects UUIDs, hashes, URLs,
e-mail addresses, paths, host:port pairs, versions and numbers from the summarised text, and any
the summary lacks are appended under ``## Exact identifiers``. The result is capped at
:data:`MAX_SUMMARY_CHARS` with a marker, the identifier list kept whole when it fits.

The model reads the older turns inside ``<transcript>``, escaped with
:func:`~memdir.safety.untrusted.escape_untrusted` like any memory text (tool results bring recalled
memory into the conversation): no text in it can close the fence or forge a tag.

A failed or empty LLM answer leaves the history as it was: :func:`compact_history` returns
``ok=False`` with the error and never a half-compacted conversation.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from memdir.errors import MemdirError
from memdir.llm.base import LLM, Message, count_tokens
from memdir.llm.prompts import load_prompt
from memdir.safety.untrusted import escape_untrusted

KEEP_USER_TURNS = 3
#: The summary should be at most this share of the tokens it replaces.
SUMMARY_RATIO = 0.15
#: …but the model is never asked for fewer tokens than this (five headings need some room).
MIN_SUMMARY_TOKENS = 200
MAX_SUMMARY_CHARS = 16_000
SUMMARY_HEADINGS = (
    "Decisions",
    "Open TODOs",
    "Constraints/Rules",
    "Pending user asks",
    "Exact identifiers",
)
IDENTIFIERS_HEADING = "## Exact identifiers"
#: Tokens kept free for the reply and the compaction itself (OpenClaw's reserve floor).
RESERVE_TOKENS = 20_000
#: A tool result longer than this is cut in the transcript given to the summariser.
TOOL_RESULT_CHARS = 2_000

_TRUNCATION_MARKER = "\n\n[… summary truncated to {limit:,} characters …]\n"

# Identifier patterns, most specific first; a later pattern never matches inside an earlier hit.
# Word edges are ASCII-only: in "端口6380" the number must still be found next to CJK text.
_B = r"(?<![A-Za-z0-9_])"
_E = r"(?![A-Za-z0-9_])"
_IDENTIFIER_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern, re.I)
    for pattern in (
        _B + r"[a-z][a-z0-9+.-]*://[^\s<>\"'`)\]，。]+",  # URLs
        _B + r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+" + _E,  # e-mail addresses
        _B + r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}" + _E,  # UUIDs
        _B + r"\d{4}-\d{2}-\d{2}(?:[t ]\d{2}:\d{2}(?::\d{2})?)?" + _E,  # dates, times
        r"(?<![\w/.~])(?:~|\.{1,2})?/(?:[\w.@%+-]+/)*[\w.@%+-]+/?",  # /abs, ./rel, ~/home
        _B + r"[a-z]:\\(?:[\w. -]+\\)*[\w.-]+",  # C:\windows\paths
        _B + r"(?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_-]+\.[a-z0-9]{1,8}" + _E,  # src/pkg/file.py
        _B + r"(?:localhost|[a-z0-9-]+(?:\.[a-z0-9-]+)*):\d{2,5}" + _E,  # host:port
        _B + r"(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}" + _E,  # hashes
        _B + r"v?\d+(?:\.\d+){1,3}(?:-[a-z0-9.]+)?" + _E,  # versions, IPs, decimals
        r"(?<![A-Za-z0-9_.-])\d{3,}(?:[a-z%]{1,3})?" + _E,  # 3+ digits: ports, IDs, amounts
        r"(?<=\bport )\d{2,5}" + _E,  # "port 80"
    )
)
_TRAILING_PUNCT = ".,;:!?)]}'\""


@dataclass
class CompactionResult:
    """What a compaction did, or why it did not.

    Attributes:
        ok: True when ``messages`` and ``summary`` replace the old history.
        messages: the turns kept verbatim (the old history, unchanged, when not ``ok``).
        summary: the new summary ("" when not ``ok``).
        summarised_messages: how many messages the summary replaces.
        summarised_tokens: their tokens (with the previous summary).
        summary_tokens: the summary's tokens.
        target_tokens: the length the model was asked for.
        added_identifiers: identifiers the model left out that memdir appended.
        truncated: the summary was cut at :data:`MAX_SUMMARY_CHARS`.
        error: why nothing was compacted.
    """

    ok: bool
    messages: list[Message]
    summary: str = ""
    summarised_messages: int = 0
    summarised_tokens: int = 0
    summary_tokens: int = 0
    target_tokens: int = 0
    added_identifiers: list[str] = field(default_factory=list)
    truncated: bool = False
    error: str | None = None

    @property
    def ratio(self) -> float:
        """Summary tokens over summarised tokens (0 when nothing was summarised)."""
        return self.summary_tokens / self.summarised_tokens if self.summarised_tokens else 0.0


def compaction_budget(context_window: int, max_output_tokens: int) -> int:
    """The most tokens a request may hold before the conversation is compacted.

    The window minus a reserve of :data:`RESERVE_TOKENS` (a fifth of a window smaller than
    100k tokens), and never less than the reply's own limit.
    """
    reserve = max(min(RESERVE_TOKENS, context_window // 5), max_output_tokens)
    return max(1, context_window - reserve)


def split_for_compaction(
    messages: Sequence[Message], keep_user_turns: int = KEEP_USER_TURNS
) -> tuple[list[Message], list[Message]]:
    """``(older, recent)``: ``recent`` starts at the ``keep_user_turns``-th last user message."""
    user_positions = [i for i, m in enumerate(messages) if m.role == "user"]
    if len(user_positions) <= keep_user_turns:
        return [], list(messages)
    cut = user_positions[-keep_user_turns] if keep_user_turns > 0 else len(messages)
    return list(messages[:cut]), list(messages[cut:])


def find_identifiers(text: str) -> list[str]:
    """Identifiers in ``text`` that a summary must keep verbatim, in order of appearance."""
    masked = text
    found: list[tuple[int, str]] = []
    for pattern in _IDENTIFIER_PATTERNS:
        for match in pattern.finditer(masked):
            value = match.group(0).rstrip(_TRAILING_PUNCT)
            if len(value) < 2:
                continue
            found.append((match.start(), value))
            # Blank the hit out so that no later pattern matches a piece of it.
            masked = masked[: match.start()] + " " * len(match.group(0)) + masked[match.end() :]
    out: dict[str, None] = {}
    for _, value in sorted(found):
        out.setdefault(value, None)
    return list(out)


def render_transcript(messages: Sequence[Message]) -> str:
    """The conversation as plain text for a summariser: one ``role: text`` block per message."""
    blocks = []
    for message in messages:
        text = message.content
        if message.role == "tool" and len(text) > TOOL_RESULT_CHARS:
            text = text[:TOOL_RESULT_CHARS] + " […]"
        calls = [f"[tool call] {call.name} {call.arguments}" for call in message.tool_calls]
        text = "\n".join(part for part in (text, *calls) if part)
        blocks.append(f"{message.role}: {text}")
    return "\n\n".join(blocks)


def compact_history(
    messages: Sequence[Message],
    llm: LLM,
    *,
    previous_summary: str | None = None,
    keep_user_turns: int = KEEP_USER_TURNS,
    max_chars: int = MAX_SUMMARY_CHARS,
    max_tokens: int | None = None,
    model: str | None = None,
) -> CompactionResult:
    """Summarise all but the last ``keep_user_turns`` user turns of ``messages``.

    Args:
        messages: the live conversation, oldest first (without the system prompt).
        llm: the model that writes the summary.
        previous_summary: the summary from the last compaction; it is folded into the new one.
        keep_user_turns: user turns (with what follows them) kept verbatim.
        max_chars: the summary's hard length limit.
        max_tokens: the reply limit passed to the model (None: the provider's setting).
        model: the tokenizer model for counting (None: the CJK-aware estimate).

    Returns:
        The new summary and kept messages, or ``ok=False`` with the history unchanged and the
        error; this function does not raise for a provider failure.
    """
    older, recent = split_for_compaction(messages, keep_user_turns)
    if not older:
        return CompactionResult(
            False,
            list(messages),
            error=f"nothing to compact: the conversation has {keep_user_turns} user turns "
            "or fewer, and those are always kept",
        )
    material = render_transcript(older)
    if previous_summary:
        material = f"[summary of the conversation before this point]\n{previous_summary}\n\n" + (
            material
        )
    summarised_tokens = count_tokens(material, model)
    target = max(MIN_SUMMARY_TOKENS, math.floor(summarised_tokens * SUMMARY_RATIO))
    system = (
        load_prompt("compact")
        .replace("{{target_tokens}}", str(target))
        .replace("{{target_words}}", str(max(50, target * 3 // 4)))
    )
    # Identifiers are taken from the text itself, so "a=1&b=2" is kept as written, not escaped.
    request = [Message("user", f"<transcript>\n{escape_untrusted(material)}\n</transcript>")]
    try:
        reply = llm.complete(request, system=system, max_tokens=max_tokens)
    except MemdirError as exc:
        return CompactionResult(
            False, list(messages), error=f"compaction failed, history kept: {exc}"
        )
    body = reply.strip()
    if not body:
        return CompactionResult(
            False, list(messages), error="compaction failed, history kept: the summary was empty"
        )
    summary, added, truncated = _secure_identifiers(body, find_identifiers(material), max_chars)
    return CompactionResult(
        True,
        recent,
        summary=summary,
        summarised_messages=len(older),
        summarised_tokens=summarised_tokens,
        summary_tokens=count_tokens(summary, model),
        target_tokens=target,
        added_identifiers=added,
        truncated=truncated,
    )


def _secure_identifiers(
    body: str, identifiers: list[str], max_chars: int
) -> tuple[str, list[str], bool]:
    """Append the identifiers ``body`` lacks under the identifiers heading and fit the result
    in ``max_chars``; returns (summary, identifiers added, truncated)."""
    missing = [i for i in identifiers if i not in body]
    summary = _with_identifiers(body, missing)
    if len(summary) <= max_chars:
        return summary, missing, False
    marker = _TRUNCATION_MARKER.format(limit=max_chars)
    # Worst case the cut loses every identifier the model wrote, so leave room for all of them.
    listing = _identifier_block(identifiers)
    room = max_chars - len(marker) - len(listing) - 2
    if room < max_chars // 4:
        # Too many identifiers to keep them all: keep the body's head and as many as fit.
        head = body[: max_chars // 4].rstrip()
        listing = _fit_listing(identifiers, max_chars - len(head) - len(marker) - 2)
        return f"{head}{marker}\n{listing}"[:max_chars], missing, True
    head = body[:room].rstrip()
    still_missing = [i for i in identifiers if i not in head]
    return _with_identifiers(head + marker, still_missing), still_missing, True


def _identifier_block(identifiers: list[str]) -> str:
    return IDENTIFIERS_HEADING + "\n" + "".join(f"- {i}\n" for i in identifiers)


def _fit_listing(identifiers: list[str], room: int) -> str:
    lines = [IDENTIFIERS_HEADING]
    used = len(IDENTIFIERS_HEADING) + 1
    for n, ident in enumerate(identifiers):
        line = f"- {ident}"
        if used + len(line) + 40 > room:
            lines.append(f"- [… {len(identifiers) - n} more identifiers omitted …]")
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines) + "\n"


def _with_identifiers(body: str, missing: list[str]) -> str:
    """``body`` with ``missing`` added at the end of its identifiers section (made if absent)."""
    if not missing:
        return body.rstrip() + "\n"
    bullets = [f"- {i}" for i in missing]
    lines = body.rstrip().split("\n")
    heading = next(
        (n for n, line in enumerate(lines) if _is_identifiers_heading(line)),
        None,
    )
    if heading is None:
        return "\n".join([*lines, "", IDENTIFIERS_HEADING, *bullets]) + "\n"
    end = next(
        (n for n in range(heading + 1, len(lines)) if lines[n].lstrip().startswith("#")),
        len(lines),
    )
    while end > heading + 1 and not lines[end - 1].strip():
        end -= 1
    section = lines[heading + 1 : end]
    if [line.strip() for line in section if line.strip()] == ["- none"]:
        section = []
    return "\n".join([*lines[: heading + 1], *section, *bullets, *lines[end:]]) + "\n"


def _is_identifiers_heading(line: str) -> bool:
    stripped = line.strip().lstrip("#").strip().rstrip(":").casefold()
    return line.lstrip().startswith("#") and stripped == "exact identifiers"
