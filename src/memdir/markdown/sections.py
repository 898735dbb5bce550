"""MEMORY.md sections: find ``## `` headings with their line spans, and add a bullet to one.

Writers touch only their section and never rewrite what a person wrote
(docs/design.md#files-are-the-truth): inserting a bullet adds exactly one line and leaves every
other byte of the file as it was, including front matter, comments, unknown sections, CRLF line
endings and a missing final newline.

Lines here are split on ``\\n`` only and keep their endings, so ``"".join(lines) == text``.
Headings inside front matter, fenced code blocks and HTML comments are not headings.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from memdir.workspace.layout import SECTION_HEADINGS

_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LIST_MARKER_RE = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?")
_TRAILING_PUNCT = " \t:：.。"


@dataclass(frozen=True)
class Section:
    """One ``## `` section of a Markdown file.

    Attributes:
        title: the heading text without ``## `` (``"Decisions"``).
        key: the MEMORY.md category it is (``"decisions"``), or None for any other heading.
        lang: the language of the heading when it is a known one (``"en"`` / ``"zh"``).
        heading_line: 0-based index of the heading line.
        end: 0-based index one past the section's last line (the next heading of level 1 or 2,
            or the end of the file).
    """

    title: str
    key: str | None
    lang: str | None
    heading_line: int
    end: int


def split_lines(text: str) -> list[str]:
    """Split on ``\\n`` only, keeping line endings (``\\r\\n`` stays whole)."""
    # str.splitlines would also break on \v, \f, \x1c-\x1e, \x85, \u2028 and \u2029.
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def line_ending(text: str) -> str:
    """The file's usual line ending: ``\\r\\n`` when most lines use it, else ``\\n``."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf * 2 >= text.count("\n") else "\n"


def _strip_eol(line: str) -> str:
    return line.rstrip("\r\n")


def heading_key(title: str) -> tuple[str, str] | None:
    """The (key, lang) of a MEMORY.md heading such as ``Decisions`` or ``核心决策``, else None.

    Matching ignores case, surrounding spaces and a trailing colon; the key itself
    (``facts``) is accepted too.
    """
    wanted = title.strip().strip(_TRAILING_PUNCT).casefold()
    for lang, headings in SECTION_HEADINGS.items():
        for key, heading in headings.items():
            if wanted in (heading.casefold(), key):
                return key, lang
    return None


def _structural_lines(lines: list[str]) -> tuple[list[bool], int | None]:
    """For each line, whether it may be a heading (outside front matter, fences, comments);
    and the line where a fence or comment that is never closed starts, if there is one."""
    usable = [True] * len(lines)
    i = 0
    if lines and _strip_eol(lines[0]).lstrip("\ufeff") == "---":
        for j in range(1, len(lines)):
            if _strip_eol(lines[j]) in ("---", "..."):
                for k in range(j + 1):
                    usable[k] = False
                i = j + 1
                break
    fence: str | None = None
    in_comment = False
    opened_at = 0
    for n in range(i, len(lines)):
        line = _strip_eol(lines[n])
        if fence is not None:
            usable[n] = False
            stripped = line.strip()
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence = None
            continue
        if in_comment:
            usable[n] = False
            if "-->" in line:
                in_comment = False
            continue
        match = _FENCE_RE.match(line)
        if match:
            usable[n] = False
            fence, opened_at = match.group(1), n
            continue
        start = line.find("<!--")
        if start != -1 and "-->" not in line[start + 4 :]:
            in_comment, opened_at = True, n
            usable[n] = not line.lstrip().startswith("<!--")
    return usable, (opened_at if fence is not None or in_comment else None)


def parse_sections(text: str) -> list[Section]:
    """Every ``## `` section of ``text`` with its line span (see :class:`Section`)."""
    lines = split_lines(text)
    usable, _ = _structural_lines(lines)
    headings: list[tuple[int, int, str]] = []  # (line, level, title)
    for n, line in enumerate(lines):
        if not usable[n]:
            continue
        match = _HEADING_RE.match(_strip_eol(line).lstrip("\ufeff") if n == 0 else _strip_eol(line))
        if match:
            headings.append((n, len(match.group(1)), (match.group(2) or "").strip()))
    sections: list[Section] = []
    for idx, (n, level, title) in enumerate(headings):
        if level != 2:
            continue
        end = len(lines)
        for m, other_level, _ in headings[idx + 1 :]:
            if other_level <= 2:
                end = m
                break
        found = heading_key(title)
        sections.append(
            Section(title, found[0] if found else None, found[1] if found else None, n, end)
        )
    return sections


def find_section(sections: list[Section], key: str) -> Section | None:
    """The first section for the category ``key`` (in any language), or None."""
    return next((s for s in sections if s.key == key), None)


def detect_language(sections: list[Section], text: str = "") -> str:
    """``zh`` when the known headings (or, with none, the text) are mostly Chinese, else ``en``."""
    langs = [s.lang for s in sections if s.lang]
    if langs:
        return "zh" if langs.count("zh") > langs.count("en") else "en"
    cjk = sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff")
    return "zh" if cjk > 10 else "en"


def content_lines(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, str]]:
    """The non-blank, non-heading lines in ``[start, end)`` as (0-based index, text without a
    list marker)."""
    lines = split_lines(text)
    out: list[tuple[int, str]] = []
    for n in range(start, len(lines) if end is None else min(end, len(lines))):
        line = _strip_eol(lines[n])
        if not line.strip() or _HEADING_RE.match(line):
            continue
        out.append((n, _LIST_MARKER_RE.sub("", line, count=1).strip()))
    return out


def normalise_for_dedup(text: str) -> str:
    """Case-, width-, whitespace- and punctuation-insensitive form of ``text``."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = "".join(" " if unicodedata.category(ch)[0] in "PSZC" else ch for ch in folded)
    return " ".join(kept.split())


def _insertion_line(lines: list[str], section: Section) -> int:
    """The line after which a new bullet goes: the end of the section's last list item (with
    its continuation lines), or the section's last non-blank line when it has no list."""
    usable, _ = _structural_lines(lines)
    body = range(section.heading_line + 1, section.end)
    items = [n for n in body if usable[n] and _LIST_MARKER_RE.match(_strip_eol(lines[n]))]
    if not items:
        last = section.heading_line
        for n in body:
            if usable[n] and _strip_eol(lines[n]).strip():
                last = n
        return last
    last = items[-1]
    n = last + 1
    while n < section.end:
        line = _strip_eol(lines[n])
        if line.strip():
            if not usable[n] or not (line[0] in " \t" or n == last + 1):
                break
            if _HEADING_RE.match(line) or _LIST_MARKER_RE.match(line):
                break
            last = n
        elif not _indented_after(lines, n, section.end):
            break
        n += 1
    return last


def _indented_after(lines: list[str], start: int, end: int) -> bool:
    """Whether the next non-blank line after ``start`` (before ``end``) is indented, i.e. the
    list item goes on after a blank line."""
    for n in range(start, end):
        line = _strip_eol(lines[n])
        if line.strip():
            return line[0] in " \t"
    return False


def insert_bullet(text: str, key: str, bullet: str, *, lang: str | None = None) -> tuple[str, int]:
    """Add ``bullet`` (one line, without its ending) to the section ``key`` of ``text``.

    The bullet goes after the section's last list item (with its continuation lines), else after
    its last non-blank line, else under its heading. A missing section is appended at the end of
    the file with its heading in the file's language (``lang`` forces one), or just before a
    code block or comment that is never closed.

    Returns:
        The new text and the 1-based line number of the bullet.

    Raises:
        ValueError: ``key`` is not a MEMORY.md category or ``bullet`` spans lines.
    """
    if key not in SECTION_HEADINGS["en"]:
        raise ValueError(f"unknown section {key!r}")
    if "\n" in bullet or "\r" in bullet:
        raise ValueError("a bullet is one line")
    lines = split_lines(text)
    eol = line_ending(text)
    sections = parse_sections(text)
    section = find_section(sections, key)
    if section is None:
        heading = f"## {SECTION_HEADINGS[lang or detect_language(sections, text)][key]}"
        _, unclosed = _structural_lines(lines)
        if unclosed is not None:
            # The file ends inside a code block or comment: a heading there would be invisible.
            block = [heading + eol, bullet + eol, eol]
            return "".join([*lines[:unclosed], *block, *lines[unclosed:]]), unclosed + 2
        prefix = ""
        if text and not text.endswith("\n"):
            prefix = eol
        if text and _strip_eol(lines[-1]).strip():
            prefix += eol
        new_text = f"{text}{prefix}{heading}{eol}{bullet}{eol}"
        return new_text, new_text.count("\n")
    last = _insertion_line(lines, section)
    before = lines[last]
    if before.endswith("\n"):
        ending = "\r\n" if before.endswith("\r\n") else "\n"
        new_lines = [*lines[: last + 1], bullet + ending, *lines[last + 1 :]]
    else:  # the last line of a file without a final newline: keep it that way
        new_lines = [*lines[: last + 1], eol + bullet]
    return "".join(new_lines), last + 2
