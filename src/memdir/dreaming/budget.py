"""MEMORY.md's budget: what dreaming's generated blocks may take, and what it evicts first.

The blocks themselves — their markers, and which lines are generated — are
:mod:`memdir.markdown.generated`. The budget (:func:`enforce_budget`, 10,000 chars by default)
evicts generated entries oldest first (by block date, then position), removing each block once
it holds nothing but generated lines and no entries; then, if still over, blocks that were
already empty. Person-written text is never removed, even when the budget cannot be met: the
result says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from memdir.markdown.generated import (
    GeneratedBlock,
    find_blocks,
    generated_indexes,
    person_lines,
    split_lines,
    strip_ending,
)

MEMORY_BUDGET_CHARS = 10_000


@dataclass(frozen=True)
class BudgetResult:
    """The text after :func:`enforce_budget` and what it took."""

    text: str
    evicted: list[str]  # the entry lines removed, oldest first, without line endings
    removed_blocks: int
    over_budget: bool
    person_chars: int  # chars of person-written lines: the floor the budget cannot go below


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
    order = [(i + 1, strip_ending(lines[i])) for block in blocks for i in block.entries]
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
            evicted.append(strip_ending(lines[index]))
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
    "MEMORY_BUDGET_CHARS",
    "BudgetResult",
    "BudgetUsage",
    "budget_usage",
    "enforce_budget",
]
