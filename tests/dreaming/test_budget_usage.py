"""budget_usage: how full MEMORY.md is, person-written vs generated, and what goes first."""

from __future__ import annotations

from memdir.dreaming.budget import budget_usage, enforce_budget
from memdir.markdown.generated import append_entries

PERSON = "# Long-term memory\n\n## Decisions\n- Postgres 16 everywhere.\n"


def _entry(text: str, key: str) -> str:
    return f"- {text} <!-- memdir:promoted memory/2026-11-28.md#L3-L3 key={key} -->"


def test_person_only_file() -> None:
    usage = budget_usage(PERSON)
    assert (usage.chars, usage.person_chars, usage.generated_chars) == (len(PERSON), len(PERSON), 0)
    assert usage.generated_lines == [] and usage.next_evicted == []
    assert usage.to_dict()["over_budget"] is False


def test_generated_blocks_are_counted_and_ordered_oldest_first() -> None:
    text = append_entries(PERSON, "2026-11-29", [_entry("newer fact", "bbbbbbbbbbbb")])
    text = append_entries(text, "2026-11-28", [_entry("older fact", "aaaaaaaaaaaa")])
    usage = budget_usage(text, budget=100)
    lines = text.splitlines()
    assert usage.person_chars == len(PERSON) + 2  # + the blank line before each block
    assert usage.person_chars + usage.generated_chars == usage.chars == len(text)
    assert [lines[n - 1] for n in usage.generated_lines if "key=" in lines[n - 1]] == [
        _entry("newer fact", "bbbbbbbbbbbb"),
        _entry("older fact", "aaaaaaaaaaaa"),
    ]
    assert [t for _, t in usage.next_evicted] == [
        _entry("older fact", "aaaaaaaaaaaa"),
        _entry("newer fact", "bbbbbbbbbbbb"),
    ]
    assert usage.to_dict()["over_budget"] is True
    # the order shown is the order the budget really evicts in
    assert enforce_budget(text, budget=len(text) - 1).evicted == [usage.next_evicted[0][1]]
