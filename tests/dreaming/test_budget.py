"""MEMORY.md's generated blocks: appending, and the budget that evicts oldest generated first."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memdir.dreaming.budget import enforce_budget
from memdir.markdown.generated import (
    append_entries,
    find_blocks,
    person_lines,
    promoted_keys,
)

PERSON = (
    "# Long-term memory\n\n## Preferences\n- Short answers, command first.\n\n"
    "## Lessons\n- Never migrate on a Friday.\n"
)


def entry(text: str, key: str, line: int = 3) -> str:
    return f"- {text} <!-- memdir:promoted memory/2026-11-28.md#L{line}-L{line} key={key} -->"


def block(day: str, *entries: str) -> str:
    body = "".join(e + "\n" for e in entries)
    return (
        f"## Promoted {day}\n<!-- memdir:dream:begin {day} -->\n{body}<!-- memdir:dream:end -->\n"
    )


def test_append_creates_a_dated_block_after_a_blank_line() -> None:
    text = append_entries(PERSON, "2026-11-30", [entry("Redis on 6380", "aa11bb22cc33")])
    assert text.startswith(PERSON)
    assert text[len(PERSON) :] == "\n" + block("2026-11-30", entry("Redis on 6380", "aa11bb22cc33"))
    assert promoted_keys(text) == {"aa11bb22cc33"}


def test_append_reuses_the_block_of_the_day_and_keeps_crlf_and_a_missing_newline() -> None:
    first = append_entries(PERSON, "2026-11-30", [entry("one", "aaaaaa")])
    second = append_entries(first, "2026-11-30", [entry("two", "bbbbbb")])
    assert len(find_blocks(second.splitlines())) == 1
    assert second.index("key=aaaaaa") < second.index("key=bbbbbb") < second.index("dream:end")
    crlf = append_entries("# Memory\r\n- mine", "2026-11-30", [entry("x", "cccccc")])
    assert crlf.startswith("# Memory\r\n- mine\r\n\r\n## Promoted 2026-11-30\r\n<!-- memdir")
    assert "\n" not in crlf.replace("\r\n", "")
    assert append_entries("", "2026-11-30", [entry("x", "dddddd")]).startswith("## Promoted")


def test_budget_evicts_the_oldest_generated_entries_first() -> None:
    old = block("2026-11-01", entry("oldest fact", "a00001"), entry("old fact", "a00002"))
    mid = block("2026-11-15", entry("middle fact", "b00001"))
    new = block("2026-11-30", entry("newest fact", "c00001"))
    # The blocks are out of date order in the file: age is the block's date, not its place.
    text = PERSON + "\n" + mid + "\n" + old + "\n" + new
    budget = len(text) - len(entry("oldest fact", "a00001")) - 1
    result = enforce_budget(text, budget)
    assert result.evicted == [entry("oldest fact", "a00001")]
    assert len(result.text) <= budget and not result.over_budget
    assert promoted_keys(result.text) == {"a00002", "b00001", "c00001"}
    # Tighter: the whole old block goes (entries, then its markers), then the middle one.
    result = enforce_budget(text, len(text) - len(old))
    assert "2026-11-01" not in result.text and "middle fact" in result.text
    assert result.removed_blocks == 1
    assert person_lines(result.text) == person_lines(text)


def test_budget_never_removes_person_text_and_says_so() -> None:
    text = PERSON + "\n" + block("2026-11-30", entry("fact", "a00001"))
    result = enforce_budget(text, 10)
    assert result.over_budget
    assert result.text == PERSON + "\n"  # the separator line is the person's, not the block's
    assert result.person_chars == len(PERSON) + 1


def test_lines_typed_inside_a_block_survive_with_their_block() -> None:
    text = PERSON + block("2026-11-01", entry("fact", "a00001"), "I typed this here myself")
    result = enforce_budget(text, 0)
    assert "I typed this here myself\n" in result.text
    assert "key=a00001" not in result.text
    assert "<!-- memdir:dream:begin 2026-11-01 -->" in result.text  # the block stays around it
    assert result.over_budget


def test_within_budget_nothing_changes() -> None:
    text = PERSON + block("2026-11-01") + block("2026-11-02", entry("x", "a00001"))
    assert enforce_budget(text, len(text)).text == text


def test_a_line_separator_inside_a_promoted_line_does_not_split_it() -> None:
    """Lines are split at ``\\n`` only, as the chunker numbers them: a U+2028 inside a promoted
    line (copied from a note) leaves no fragment behind when the line is evicted."""
    text = PERSON + block("2026-11-01", entry("a\u2028b", "a00001"), entry("c", "a00002"))
    result = enforce_budget(text, len(PERSON) + 10)
    assert result.evicted[0] == entry("a\u2028b", "a00001")
    assert "a\u2028" not in result.text


def test_unclosed_markers_are_person_text() -> None:
    text = PERSON + "<!-- memdir:dream:begin 2026-11-01 -->\n" + entry("x", "a00001") + "\n"
    assert find_blocks(text.splitlines()) == []
    assert enforce_budget(text, 0).text == text


# -- property: whatever the mix, person bytes survive and eviction goes oldest first ----------

_person_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r"),
    max_size=120,
).filter(lambda s: "memdir:" not in s)
_day = st.dates().map(lambda d: f"2026-{d.month:02d}-{d.day:02d}")


@st.composite
def memory_files(draw: st.DrawFn) -> tuple[str, list[tuple[str, int, str]]]:
    """MEMORY.md text from person chunks and generated blocks; the generated entries as
    (day, order, line)."""
    parts: list[str] = []
    entries: list[tuple[str, int, str]] = []
    for index in range(draw(st.integers(0, 8))):
        if draw(st.booleans()):
            chunk = draw(_person_text)
            parts.append(chunk if chunk.endswith("\n") or not chunk else chunk + "\n")
        else:
            day = draw(_day)
            texts = draw(st.lists(st.text(min_size=1, max_size=30).filter(_one_line), max_size=4))
            lines = [entry(t.strip() or "x", f"{index:03d}{n:03d}") for n, t in enumerate(texts)]
            entries.extend((day, len(entries), line) for line in lines)
            parts.append(block(day, *lines))
    return "".join(parts), entries


def _one_line(text: str) -> bool:
    return "memdir:" not in text and not any(c in text for c in "\r\n\x0b\x0c\x1c\x1d\x1e\x85")


@settings(max_examples=150, deadline=None)
@given(memory_files(), st.integers(0, 1500))
def test_budget_property(sample: tuple[str, list[tuple[str, int, str]]], budget: int) -> None:
    text, entries = sample
    result = enforce_budget(text, budget)
    assert person_lines(result.text) == person_lines(text)
    assert len(result.text) <= budget or not promoted_keys(result.text)
    assert result.over_budget == (len(result.text) > budget)
    # What was evicted is a prefix of the entries sorted oldest first (block date, then order).
    oldest_first = [line for _, _, line in sorted(entries, key=lambda e: (e[0], e[1]))]
    assert result.evicted == oldest_first[: len(result.evicted)]
    kept = [line for line in oldest_first if line + "\n" in result.text]
    assert kept == oldest_first[len(result.evicted) :]
