"""MEMORY.md's generated dreaming blocks: finding them, appending to them, keeping the budget.

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

The budget (:func:`enforce_budget`, 10,000 chars by default) evicts generated entries oldest
first (by block date, then position), removing each block once it holds nothing but generated
lines and no entries; then, if still over, blocks that were already empty. Person-written text is
never removed, even when the budget cannot be met: the result says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

MEMORY_BUDGET_CHARS = 10_000

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


@dataclass(frozen=True)
class BudgetResult:
    """The text after :func:`enforce_budget` and what it took."""

    text: str
    evicted: list[str]  # the entry lines removed, oldest first, without line endings
    removed_blocks: int
    over_budget: bool
    person_chars: int  # chars of person-written lines: the floor the budget cannot go below


def split_lines(text: str) -> list[str]:
    """Lines with their endings (``\\n`` or ``\\r\\n``); ``"".join`` gives the text back."""
    return text.splitlines(keepends=True) if text else []


def _bare(line: str) -> str:
    return line.rstrip("\r\n")


def find_blocks(lines: Sequence[str]) -> list[GeneratedBlock]:
    """The generated blocks among ``lines`` (with or without line endings), in file order."""
    blocks: list[GeneratedBlock] = []
    open_at: tuple[int, str] | None = None
    for index, raw in enumerate(lines):
        line = _bare(raw)
        begin = BEGIN_RE.match(line)
        if begin:
            open_at = (index, begin.group(1))  # an earlier unclosed begin stays person text
        elif END_RE.match(line) and open_at is not None:
            start = open_at[0]
            taken = blocks[-1].end if blocks else -1
            if start - 1 > taken and HEADING_RE.match(_bare(lines[start - 1])):
                start -= 1  # the block's heading, right above its begin marker
            block = GeneratedBlock(open_at[1], start, index)
            for inner in range(open_at[0] + 1, index):
                text = _bare(lines[inner])
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


@dataclass(frozen=True)
class BudgetUsage:
    """How full MEMORY.md is, and whose text fills it.

    Attributes:
        chars: the file's length in characters.
        person_chars: characters of person-written lines (never evicted).
        generated_chars: characters of generated dreaming blocks.
        budget: the limit :func:`enforce_budget` keeps the file under.
        generated_lines: 1-based numbers of the generated lines.
        next_evicted: the generated entries in the order the budget would evict them
            (oldest first), as ``(1-based line, text)``.
    """

    chars: int
    person_chars: int
    generated_chars: int
    budget: int
    generated_lines: list[int]
    next_evicted: list[tuple[int, str]]

    def to_dict(self) -> dict[str, object]:
        return {
            "chars": self.chars,
            "person_chars": self.person_chars,
            "generated_chars": self.generated_chars,
            "budget": self.budget,
            "over_budget": self.chars > self.budget,
            "generated_lines": self.generated_lines,
            "next_evicted": [{"line": n, "text": t} for n, t in self.next_evicted],
        }


def budget_usage(text: str, budget: int = MEMORY_BUDGET_CHARS) -> BudgetUsage:
    """Measure ``text`` (MEMORY.md) against ``budget``: person vs generated characters, and which
    generated entries :func:`enforce_budget` would evict first."""
    lines = split_lines(text)
    generated = sorted(generated_indexes(lines))
    generated_chars = sum(len(lines[i]) for i in generated)
    blocks = sorted(find_blocks(lines), key=lambda b: (b.day, b.begin))
    order = [(i + 1, _bare(lines[i])) for block in blocks for i in block.entries]
    return BudgetUsage(
        chars=len(text),
        person_chars=len(text) - generated_chars,
        generated_chars=generated_chars,
        budget=budget,
        generated_lines=[i + 1 for i in generated],
        next_evicted=order,
    )


def enforce_budget(text: str, budget: int = MEMORY_BUDGET_CHARS) -> BudgetResult:
    """Evict generated entries, oldest first, until ``len(text) ≤ budget`` (see module doc)."""
    lines = split_lines(text)
    blocks = sorted(find_blocks(lines), key=lambda b: (b.day, b.begin))
    removed: set[int] = set()
    dropped: set[int] = set()  # block begins
    length = len(text)
    evicted: list[str] = []

    def drop_block(block: GeneratedBlock) -> int:
        freed = 0
        for index in range(block.begin, block.end + 1):
            if index not in removed:
                removed.add(index)
                freed += len(lines[index])
        dropped.add(block.begin)
        return freed

    for block in blocks:  # entries, oldest block first; already-empty blocks wait
        if length <= budget:
            break
        for index in block.entries:
            if length <= budget:
                break
            removed.add(index)
            length -= len(lines[index])
            evicted.append(_bare(lines[index]))
        if block.entries and not block.foreign and all(i in removed for i in block.entries):
            length -= drop_block(block)
    for block in blocks:  # still over: every entry is gone; drop the empty blocks too
        if length <= budget:
            break
        if block.begin not in dropped and not block.foreign:
            length -= drop_block(block)
    new_text = "".join(line for i, line in enumerate(lines) if i not in removed)
    person = sum(len(line) for line in person_lines(new_text))
    return BudgetResult(new_text, evicted, len(dropped), length > budget, person)


__all__ = [
    "BEGIN_RE",
    "END_RE",
    "ENTRY_RE",
    "KEY_RE",
    "MEMORY_BUDGET_CHARS",
    "BudgetResult",
    "BudgetUsage",
    "GeneratedBlock",
    "append_entries",
    "budget_usage",
    "enforce_budget",
    "find_blocks",
    "generated_indexes",
    "person_lines",
    "promoted_keys",
    "split_lines",
]
