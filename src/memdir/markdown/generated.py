"""Generated blocks in MEMORY.md: the markers memdir writes around what it adds on its own,
and how to tell those lines from a person's (docs/design.md#dreaming).

A generated block, appended at the end of MEMORY.md by ``memdir dream --apply``::

    ## Promoted 2026-11-30
    <!-- memdir:dream:begin 2026-11-30 -->
    - promoted text <!-- memdir:promoted memory/2026-11-28.md#L3-L4 key=3fa9c01b2e7d -->
    <!-- memdir:dream:end -->

A block runs from a begin marker to the next end marker, both included, plus the
``## Promoted DATE`` heading right above the begin marker. The heading sits outside the markers
on purpose: a writer that appends to the section before it (``## Todos``, say) sees that section
end at the heading, and so never writes between our markers. Inside, blank lines, a heading of
that form and entry lines (``- … <!-- memdir:promoted PATH#La-Lb key=KEY -->``) are generated.
Everything else in the file is person-written, and so is any other line inside a block (someone
typed there): such a line is never removed, and a block that holds one is never removed either.
A begin marker without an end marker, or an end marker without a begin, is person text.

Dreaming writes these blocks (:mod:`memdir.dreaming.promotion`) and keeps them within their
budget (:mod:`memdir.dreaming.budget`); the audit trail's provenance and the history read them
(:mod:`memdir.audit.provenance`, :mod:`memdir.history`). They are Markdown, so they live here,
below all of them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from memdir.markdown.sections import split_lines

BEGIN_RE = re.compile(r"^<!-- memdir:dream:begin (\d{4}-\d{2}-\d{2}) -->[ \t]*$")
END_RE = re.compile(r"^<!-- memdir:dream:end -->[ \t]*$")
HEADING_RE = re.compile(r"^#{1,6} Promoted \d{4}-\d{2}-\d{2}[ \t]*$")
ENTRY_RE = re.compile(
    r"^- .*<!-- memdir:promoted (\S+)#L(\d+)-L(\d+) key=([0-9a-f]{6,64}) -->[ \t]*$"
)
#: A promotion marker anywhere (also in lines a person moved out of a block).
KEY_RE = re.compile(r"<!-- memdir:promoted \S+ key=([0-9a-f]{6,64}) -->")


@dataclass
class GeneratedBlock:
    """Line indexes (0-based) of one generated block."""

    day: str
    begin: int  # the heading above the begin marker, or the marker itself
    end: int
    entries: list[int] = field(default_factory=list)
    foreign: list[int] = field(default_factory=list)  # person-written lines inside the block


def strip_ending(line: str) -> str:
    """``line`` without its line ending."""
    return line.rstrip("\r\n")


def find_blocks(lines: Sequence[str]) -> list[GeneratedBlock]:
    """The generated blocks among ``lines`` (with or without line endings), in file order."""
    blocks: list[GeneratedBlock] = []
    open_at: tuple[int, str] | None = None
    for index, raw in enumerate(lines):
        line = strip_ending(raw)
        begin = BEGIN_RE.match(line)
        if begin:
            open_at = (index, begin.group(1))  # an earlier unclosed begin stays person text
        elif END_RE.match(line) and open_at is not None:
            start = open_at[0]
            taken = blocks[-1].end if blocks else -1
            if start - 1 > taken and HEADING_RE.match(strip_ending(lines[start - 1])):
                start -= 1  # the block's heading, right above its begin marker
            block = GeneratedBlock(open_at[1], start, index)
            for inner in range(open_at[0] + 1, index):
                text = strip_ending(lines[inner])
                if ENTRY_RE.match(text):
                    block.entries.append(inner)
                elif text.strip() and not HEADING_RE.match(text):
                    block.foreign.append(inner)
            blocks.append(block)
            open_at = None
    return blocks


def generated_indexes(lines: Sequence[str]) -> set[int]:
    """Indexes of every generated line (markers, headings, blanks and entries of blocks)."""
    out: set[int] = set()
    for block in find_blocks(lines):
        out.update(range(block.begin, block.end + 1))
        out.difference_update(block.foreign)
    return out


def person_lines(text: str) -> list[str]:
    """The person-written lines of ``text``, with their endings, in order."""
    lines = split_lines(text)
    generated = generated_indexes(lines)
    return [line for i, line in enumerate(lines) if i not in generated]


def promoted_keys(text: str) -> set[str]:
    """Recall keys with a promotion marker anywhere in ``text``."""
    return set(KEY_RE.findall(text))


def append_entries(text: str, day: str, entries: Sequence[str]) -> str:
    """Add entry lines to the block of ``day`` (before its end marker), or to a new block at
    the end of the file. Bytes outside the block are unchanged, except that a file not ending in
    a newline gets one and a blank line separates a new block from the text before it."""
    if not entries:
        return text
    newline = "\r\n" if "\r\n" in text else "\n"
    body = "".join(entry + newline for entry in entries)
    lines = split_lines(text)
    same_day = [b for b in find_blocks(lines) if b.day == day]
    if same_day:
        end = same_day[-1].end
        return "".join(lines[:end]) + body + "".join(lines[end:])
    out = text
    if out and not out.endswith("\n"):
        out += newline
    if out and not out.endswith(("\n\n", "\n\r\n")):
        out += newline
    return (
        f"{out}## Promoted {day}{newline}<!-- memdir:dream:begin {day} -->{newline}"
        f"{body}<!-- memdir:dream:end -->{newline}"
    )


__all__ = [
    "BEGIN_RE",
    "END_RE",
    "ENTRY_RE",
    "HEADING_RE",
    "KEY_RE",
    "GeneratedBlock",
    "append_entries",
    "find_blocks",
    "generated_indexes",
    "person_lines",
    "promoted_keys",
    "split_lines",
    "strip_ending",
]
