"""Structured notes: one block a chunk under its headings (memdir.markdown.structure)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memdir.markdown.chunking import split_lines
from memdir.markdown.structure import (
    HEADING_RE,
    PACK_TOKENS,
    block_spans,
    chunk_structured,
    heading_title,
    split_context,
)
from memdir.text import estimate_tokens
from memdir.workspace.templates import TEMPLATE_LINES, TEMPLATES


def own_lines(text: str, start: int, end: int) -> list[str]:
    return split_lines(text)[start - 1 : end]


def test_each_item_is_a_block_under_its_two_nearest_headings() -> None:
    text = (
        "# People\n\n## Kafka\n\n- owner: Tomás\n- on call: Priya, then Sam\n"
        "### Retention\n- orders: 14d (was 7d)\n\n## Redis\n- port 6380\n"
    )
    chunks = chunk_structured(text, pack_tokens=0)
    assert [(c.start_line, c.end_line, c.text) for c in chunks] == [
        (5, 5, "# People\n## Kafka\n- owner: Tomás"),
        (6, 6, "# People\n## Kafka\n- on call: Priya, then Sam"),
        (8, 8, "## Kafka\n### Retention\n- orders: 14d (was 7d)"),
        (11, 11, "# People\n## Redis\n- port 6380"),
    ]
    for c in chunks:
        context, own = split_context(c.text, c.start_line, c.end_line)
        assert own == own_lines(text, c.start_line, c.end_line)
        assert all(HEADING_RE.match(line) for line in context)
    assert heading_title("## Kafka ##") == "Kafka"


def test_nested_items_continuations_tables_code_and_paragraphs_are_blocks() -> None:
    text = (
        "## Ops\n"
        "- Redis\n  - host r1\n  - port 6379\n"
        "- a long item\ncontinued lazily\n"
        "\n"
        "- loose item\n\n  its second paragraph\n"
        "\n"
        "| env | port |\n|---|---|\n| prod | 5432 |\n"
        "\n"
        "```bash\nmake deploy\n\n# not a heading\n```\n"
        "\n"
        "A paragraph\nover two lines.\n"
    )
    spans = [(c.start_line, c.end_line) for c in chunk_structured(text, pack_tokens=0)]
    assert spans == [(2, 4), (5, 6), (8, 10), (12, 14), (16, 20), (22, 23)]
    lines = split_lines(text)
    blocks = [(a + 2, b + 2) for a, b in block_spans(lines[1:])]  # a chunk's own lines
    assert blocks == spans


def test_small_blocks_under_the_same_headings_share_a_chunk_up_to_the_budget() -> None:
    text = (
        "# People\n\n## Kafka\n\n- owner: Tomás\n- on call: Priya, then Sam\n"
        "### Retention\n- orders: 14d (was 7d)\n- audit: 90d\n\n## Redis\n- port 6380\n"
    )
    chunks = chunk_structured(text)
    assert [(c.start_line, c.end_line, c.text) for c in chunks] == [
        (5, 6, "# People\n## Kafka\n- owner: Tomás\n- on call: Priya, then Sam"),
        (8, 9, "## Kafka\n### Retention\n- orders: 14d (was 7d)\n- audit: 90d"),
        (12, 12, "# People\n## Redis\n- port 6380"),
    ]
    for c in chunks:  # the context is still split off exactly
        context, own = split_context(c.text, c.start_line, c.end_line)
        assert own == own_lines(text, c.start_line, c.end_line)
        assert all(HEADING_RE.match(line) for line in context)


def test_a_pack_ends_at_the_budget_and_a_large_block_stays_alone() -> None:
    facts = [f"- fact {i}: the service on port {8000 + i} is owned by team {i}" for i in range(9)]
    big = "- a long item: " + "words " * 60
    text = "## Facts\n" + "\n".join(facts[:4]) + "\n" + big + "\n" + "\n".join(facts[4:]) + "\n"
    chunks = chunk_structured(text, pack_tokens=40)
    bodies = [split_context(c.text, c.start_line, c.end_line)[1] for c in chunks]
    assert all(estimate_tokens("\n".join(b)) <= 40 for b in bodies if big not in b)
    assert [big] in bodies  # alone, neither packed with the facts before nor after it
    assert [line for b in bodies for line in b] == split_lines(text)[1:]
    assert len(chunks) < len(facts)  # packed
    # blank lines between packed blocks belong to the chunk, so its range stays its lines
    loose = "## Facts\n- a\n\n- b\n"
    [chunk] = chunk_structured(loose)
    assert (chunk.start_line, chunk.end_line, chunk.text) == (2, 4, "## Facts\n- a\n\n- b")
    assert block_spans(split_lines(loose)[1:]) == [(0, 0), (2, 2)]


def test_a_template_block_ends_a_pack() -> None:
    template = TEMPLATES["en"]["MEMORY.md"].split("\n\n")[1]  # the intro paragraph
    assert all(line.strip() in TEMPLATE_LINES for line in template.splitlines())
    mixed = f"## Notes\n- one\n\n{template}\n\n- two\n"
    chunks = chunk_structured(mixed, skip=TEMPLATE_LINES)
    assert [(c.start_line, c.end_line) for c in chunks] == [(2, 2), (7, 7)]


def test_the_default_budget_is_small() -> None:
    assert 32 <= PACK_TOKENS <= 96


def test_the_bare_template_makes_no_chunk_and_its_title_is_no_context() -> None:
    for lang, files in TEMPLATES.items():
        assert chunk_structured(files["MEMORY.md"], skip=TEMPLATE_LINES) == [], lang
    text = TEMPLATES["en"]["MEMORY.md"].replace(
        "## Decisions\n", "## Decisions\n- Postgres 16 for new services\n"
    )
    [chunk] = chunk_structured(text, skip=TEMPLATE_LINES)
    assert chunk.text == "## Decisions\n- Postgres 16 for new services"


def test_a_block_longer_than_a_chunk_is_cut_with_its_context() -> None:
    lines = [f"sentence {i} of a long paragraph about the ledger." for i in range(60)]
    text = "## Ledger\n" + "\n".join(lines) + "\n"
    chunks = chunk_structured(text, max_tokens=60, overlap_tokens=20)
    assert len(chunks) > 3
    assert all(c.text.startswith("## Ledger\n") for c in chunks)
    covered = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
    assert covered == set(range(2, 62))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(["# T", "## S", "### s", "", "- item", "  - nested", "1. step"]),
            st.sampled_from(["| a | b |", "```", "text line", "  indented", "- [ ] todo"]),
            st.text(alphabet="ab -#|`\t中文", max_size=30),
        ),
        max_size=40,
    )
)
def test_every_content_line_is_in_a_chunk_exactly_as_written(parts: list[str]) -> None:
    text = "\n".join(parts) + "\n"
    lines = split_lines(text)
    chunks = chunk_structured(text, max_tokens=40, overlap_tokens=10)
    covered: set[int] = set()
    for c in chunks:
        context, own = split_context(c.text, c.start_line, c.end_line)
        assert 1 <= c.start_line <= c.end_line <= len(lines)
        if c.start_col == 0 and c.end_col is None:
            assert own == lines[c.start_line - 1 : c.end_line]
        assert all(HEADING_RE.match(line) for line in context)
        covered.update(range(c.start_line, c.end_line + 1))
    for number, line in enumerate(lines, start=1):
        if line.strip() and not HEADING_RE.match(line):
            assert number in covered or line.strip().startswith(("```", "~~~")), (number, line)
