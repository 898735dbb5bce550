"""MEMORY.md sections: parsing with line spans, and inserting a bullet that changes nothing else."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memdir.markdown.sections import (
    content_lines,
    detect_language,
    find_section,
    heading_key,
    insert_bullet,
    normalise_for_dedup,
    parse_sections,
    split_lines,
)

TRICKY = (
    "---\n"
    "title: memory\n"
    "## not a heading (front matter)\n"
    "---\n"
    "# Long-term memory\n"
    "\n"
    "## Preferences\n"
    "- tabs over spaces\n"
    "  (continued)\n"
    "\n"
    "<!--\n"
    "## Decisions (inside a comment)\n"
    "-->\n"
    "```\n"
    "## Todos (inside a fence)\n"
    "```\n"
    "## Unknown notes\n"
    "Free text someone wrote.\n"
    "## Decisions ##\n"
    "- use Postgres\n"
    "### Details\n"
    "- a sub-item\n"
    "# Appendix\n"
    "## Todos\n"
)


def test_parse_sections_with_spans_ignoring_front_matter_comments_and_fences() -> None:
    sections = parse_sections(TRICKY)
    assert [(s.title, s.key, s.heading_line, s.end) for s in sections] == [
        ("Preferences", "preferences", 6, 16),
        ("Unknown notes", None, 16, 18),
        ("Decisions", "decisions", 18, 22),  # ### Details stays inside; # Appendix ends it
        ("Todos", "todos", 23, 24),
    ]


def test_heading_keys_in_english_and_chinese() -> None:
    assert heading_key("Project facts") == ("facts", "en")
    assert heading_key("  decisions: ") == ("decisions", "en")
    assert heading_key("待办事项") == ("todos", "zh")
    assert heading_key("用户偏好：") == ("preferences", "zh")
    assert heading_key("Shopping list") is None
    zh = parse_sections("# 长期记忆\n\n## 用户偏好\n\n## 核心决策\n")
    assert find_section(zh, "decisions") is not None
    assert detect_language(zh) == "zh"
    assert detect_language(parse_sections("## Todos\n")) == "en"


def test_split_lines_keeps_every_byte() -> None:
    text = "a\r\nb\u2028c\x0cd\n\ne"
    assert "".join(split_lines(text)) == text
    assert split_lines(text) == ["a\r\n", "b\u2028c\x0cd\n", "\n", "e"]


def test_insert_after_the_last_bullet_and_its_continuation() -> None:
    new, line = insert_bullet(TRICKY, "preferences", "- dark mode")
    assert line == 10
    assert split_lines(new)[8:11] == ["  (continued)\n", "- dark mode\n", "\n"]


def test_insert_into_an_empty_section_goes_under_its_heading() -> None:
    text = "## Preferences\n\n## Decisions\n\n## Todos\n"
    new, line = insert_bullet(text, "decisions", "- ship it")
    assert new == "## Preferences\n\n## Decisions\n- ship it\n\n## Todos\n"
    assert line == 4


def test_insert_keeps_crlf_and_a_missing_final_newline() -> None:
    text = "## Decisions\r\n- one\r\n\r\n## Todos\r\n- two"
    new, line = insert_bullet(text, "decisions", "- three")
    assert new == "## Decisions\r\n- one\r\n- three\r\n\r\n## Todos\r\n- two"
    assert line == 3
    new, line = insert_bullet(text, "todos", "- four")
    assert new == text + "\r\n- four" and line == 6


def test_a_missing_section_is_appended_in_the_file_language() -> None:
    zh = "# 长期记忆\n\n## 用户偏好\n- 喜欢简洁\n"
    new, line = insert_bullet(zh, "todos", "- 写周报")
    assert new == zh + "\n## 待办事项\n- 写周报\n" and line == 7
    new, line = insert_bullet("", "facts", "- port 6380")
    assert new == "## Project facts\n- port 6380\n" and line == 2
    new, _ = insert_bullet("notes without newline", "todos", "- x", lang="en")
    assert new == "notes without newline\n\n## Todos\n- x\n"


def test_insert_refuses_bad_input() -> None:
    with pytest.raises(ValueError):
        insert_bullet("", "gossip", "- x")
    with pytest.raises(ValueError):
        insert_bullet("", "todos", "- x\n- y")


def test_content_lines_and_normalising() -> None:
    text = "## Todos\n- [ ] Call Bob!\n* second\n\n1. third\nplain\n"
    assert content_lines(text) == [(1, "Call Bob!"), (2, "second"), (4, "third"), (5, "plain")]
    assert normalise_for_dedup("  Call   BOB, now!! ") == "call bob now"
    assert normalise_for_dedup("端口，改为６３８０。") == "端口 改为6380"


# -- property: inserting a bullet adds that line and changes nothing else -----------------

_LINE = st.one_of(
    st.sampled_from(
        [
            "## Preferences",
            "## Decisions",
            "## Project facts",
            "## 待办事项",
            "## Unknown",
            "# Title",
            "### Sub",
            "- a bullet",
            "* star bullet",
            "  continued",
            "",
            "   ",
            "text line",
            "<!-- comment -->",
            "<!--",
            "-->",
            "```",
            "---",
        ]
    ),
    st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n"), max_size=12),
)


@st.composite
def documents(draw: st.DrawFn) -> str:
    lines = draw(st.lists(_LINE, max_size=25))
    endings = draw(
        st.lists(st.sampled_from(["\n", "\r\n"]), min_size=len(lines), max_size=len(lines))
    )
    text = "".join(line + end for line, end in zip(lines, endings, strict=True))
    if text and draw(st.booleans()):
        text = text.rstrip("\r\n")
    return text


@settings(max_examples=300, deadline=None)
@given(documents(), st.sampled_from(["preferences", "decisions", "facts", "lessons", "todos"]))
def test_inserting_a_bullet_changes_nothing_but_that_line(text: str, key: str) -> None:
    bullet = "- the new fact"
    had_section = find_section(parse_sections(text), key) is not None
    new, line = insert_bullet(text, key, bullet)
    new_lines = split_lines(new)
    assert new_lines[line - 1].rstrip("\r\n") == bullet
    if had_section:
        without = "".join(new_lines[: line - 1] + new_lines[line:])
        # Either one whole line was inserted, or the bullet was added after a last line that
        # had no line ending (which then gets one; the old bytes stay a prefix).
        assert without == text or (new.startswith(text) and new.endswith(bullet))
    elif new.startswith(text):  # appended: blank line(s), the heading, the bullet
        assert new[len(text) :].lstrip("\r\n").startswith("## ")
    else:  # put before a code block or comment that never closes: heading, bullet, blank line
        assert new_lines[line - 2].startswith("## ") and not new_lines[line].strip()
        assert "".join(new_lines[: line - 2] + new_lines[line + 1 :]) == text
    section = find_section(parse_sections(new), key)
    assert section is not None and section.heading_line < line - 1 < section.end
