"""carry_change: memdir's change carried onto another version of the file."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memdir.audit.merge import carry_change, changed_lines


def test_same_base_gives_after() -> None:
    assert carry_change("a\nb\n", "a\nb\nc\n", "a\nb\n") == "a\nb\nc\n"


def test_append_skips_persons_uncommitted_tail() -> None:
    before = "# day\n- mine\n- person unstaged\n"
    after = before + "- memdir\n"
    base = "# day\n- mine\n"
    assert carry_change(before, after, base) == "# day\n- mine\n- memdir\n"


def test_insert_in_section_lands_after_the_same_line() -> None:
    before = "## A\n- a1\n## B\n- b1\n"
    after = "## A\n- a1\n- new\n## B\n- b1\n"
    base = "intro committed\n## A\n- a1\n## B\n- b1\n- b2 committed\n"
    assert carry_change(before, after, base) == (
        "intro committed\n## A\n- a1\n- new\n## B\n- b1\n- b2 committed\n"
    )


def test_removal_only_where_base_has_the_line() -> None:
    before = "- keep\n- drop\n- person\n"
    after = "- keep\n- person\n"
    base = "- keep\n- drop\n"
    assert carry_change(before, after, base) == "- keep\n"


def test_new_file_onto_nothing() -> None:
    assert carry_change("", "# t\n- x\n", "") == "# t\n- x\n"


def test_line_without_newline_gets_one_before_an_insert() -> None:
    assert carry_change("a\nb", "a\nb\nc\n", "a\nb") == "a\nb\nc\n"


def test_changed_lines_numbers() -> None:
    removed, added = changed_lines("a\nb\nc\n", "a\nx\nc\nd\n")
    assert removed == [(2, "b")]
    assert added == [(2, "x"), (4, "d")]


_lines = st.lists(st.sampled_from(["- a", "- b", "- c", "", "## H", "- d"]), max_size=8)


@given(_lines, _lines, _lines)
def test_persons_lines_never_leak(
    common: list[str], persons: list[str], memdirs: list[str]
) -> None:
    """Lines only the person added (uncommitted) never appear in the result; every line memdir
    added does."""
    persons = [f"- person {i} {x}" for i, x in enumerate(persons)]
    memdirs = [f"- memdir {i} {x}" for i, x in enumerate(memdirs)]
    base = "".join(f"{x}\n" for x in common)
    before = "".join(f"{x}\n" for x in common + persons)
    after = "".join(f"{x}\n" for x in common + persons + memdirs)
    result = carry_change(before, after, base)
    assert not any(p in result for p in persons)
    assert all(m in result for m in memdirs)
    assert carry_change(before, after, before) == after
