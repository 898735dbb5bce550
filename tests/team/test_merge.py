"""The merge rules of memdir's files (no git here): both sides' lines kept in order, a line
both added once, the other side's removals honoured, MEMORY.md per section, disagreements
found, never a conflict marker."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memdir.team.merge import merge_file, union_merge
from tests.team.conftest import MARKERS

LOG = "memory/2026-12-04.md"


def test_two_appends_keep_both_sides_in_order() -> None:
    base = "# 2026-12-04\n- one\n"
    ours = base + "- two from here\n- three from here\n"
    theirs = base + "- two from there\n"
    merged = merge_file(LOG, base, ours, theirs)
    assert merged is not None
    assert merged.text == (
        "# 2026-12-04\n- one\n- two from there\n- two from here\n- three from here\n"
    )
    assert not merged.contradictions


def test_a_line_holding_a_line_separator_stays_one_line() -> None:
    # U+2028 is text inside a line, not its end (as for the chunker and the audit merge): the
    # other side's "- still here" is its own fact, not the tail of this side's line.
    base = "# 2026-12-04\n- one\n"
    ours = base + "- here\u2028- still here\n"
    theirs = base + "- still here\n"
    merged = merge_file(LOG, base, ours, theirs)
    assert merged is not None
    assert merged.text == base + "- still here\n- here\u2028- still here\n"


def test_files_made_apart_keep_one_heading_and_every_fact() -> None:
    ours = "# 2026-12-04\n\n- written here\n"
    theirs = "# 2026-12-04\n\n- written there\n- written here\n"
    merged = merge_file(LOG, None, ours, theirs)
    assert merged is not None
    assert merged.text.count("# 2026-12-04") == 1
    assert merged.text.count("written here") == 1 and "written there" in merged.text


def test_a_line_the_other_side_removed_goes_and_an_edit_against_a_delete_stays() -> None:
    base = "- keep\n- forget me\n- edit me\n"
    ours = "- keep\n- forget me\n- edited here\n"
    theirs = "- keep\n- edit me\n"  # they forgot a line and kept the one we edited
    merged = merge_file("memory/topic.md", base, ours, theirs)
    assert merged is not None and merged.text == "- keep\n- edited here\n"
    assert merge_file("memory/topic.md", base, ours, None) is not None  # edited: not deleted
    assert merge_file("memory/topic.md", base, base, None) is None


def test_memory_bullets_land_in_their_own_section_without_a_common_base() -> None:
    ours = "# Memory\n\n## Decisions\n- helm\n\n## Project facts\n- api on 8080\n"
    theirs = "# Memory\n\n## Decisions\n- freeze on fridays\n\n## Todos\n- rotate keys\n"
    merged = merge_file("MEMORY.md", None, ours, theirs)
    assert merged is not None
    decisions = merged.text.split("## Decisions", 1)[1].split("## ", 1)[0]
    assert "helm" in decisions and "fridays" in decisions
    assert merged.text.rstrip().endswith("## Todos\n- rotate keys")
    assert merged.text.count("# Memory") == 1


def test_both_sides_changing_one_bullet_keeps_both_and_says_so() -> None:
    base = "## Project facts\n- the api runs on port 8080\n- other\n"
    ours = base.replace("8080", "8081")
    theirs = base.replace("8080", "9090")
    merged = merge_file("MEMORY.md", base, ours, theirs)
    assert merged is not None
    assert "port 8081" in merged.text and "port 9090" in merged.text
    assert "port 8080" not in merged.text
    (found,) = merged.contradictions
    assert found.base == ("- the api runs on port 8080",)
    assert found.ours == ("- the api runs on port 8081",) and found.section == "facts"
    assert found.theirs == ("- the api runs on port 9090",)


_lines = st.lists(st.text("abcxyz -", min_size=1, max_size=6), max_size=6)


@settings(max_examples=300, deadline=None)
@given(base=_lines, ours_new=_lines, theirs_new=_lines)
def test_append_only_sides_lose_nothing(
    base: list[str], ours_new: list[str], theirs_new: list[str]
) -> None:
    """Daily logs only grow: every line either side has is in the merge, in each side's
    order, and no marker is ever written."""
    text = "".join(f"{x}\n" for x in base)
    ours = text + "".join(f"{x}\n" for x in ours_new)
    theirs = text + "".join(f"{x}\n" for x in theirs_new)
    merged = union_merge(text, ours, theirs)
    lines = merged.split("\n")
    it = iter(lines)
    assert all(line in it for line in ours.split("\n"))  # ours whole and in order
    assert {x for x in theirs.split("\n") if x.strip()} <= set(lines)  # theirs all there
    assert not any(m in merged for m in MARKERS)
