"""Chunks that follow a note's structure: small blocks (list items, paragraphs, tables, code
blocks) packed under their headings (docs/design.md#chunking, "Structured notes").

MEMORY.md, topic notes, skills and other evergreen notes are kept as lists under headings: a
200-token window over them mixes twenty facts, so its vector says little about any one of them
and a hit shows twenty lines to find one. Here each *block* is a chunk of its own:

- a list item with its continuation (indented lines, a nested list, lazy continuation lines);
- a paragraph, a table, or a fenced code block;

and each chunk's text starts with the headings it sits under (its *context*: the nearest two
heading lines, verbatim), so that "## Kafka" / "- owner: Tomás" is found by "who owns kafka"
and shown with its heading.

One block a chunk made 1.8 million chunks of a 10,000-file vault whose notes are lists of short
bullets (an index 13.5 times the Markdown), so consecutive blocks under the *same* headings are
packed into one chunk while their lines fit in ``pack_tokens`` (:data:`PACK_TOKENS`); a heading
ends a pack, and so does a block of template lines or one larger than ``pack_tokens``, which
stays alone. A search shows only the blocks of a packed chunk that hold the query's words
(:func:`block_spans`; ``memdir.search.placement``). The chunk's line range is its blocks' own
lines (with the blank lines between them); the context lines
come first in its text (:func:`split_context` takes them off again). A block longer than
``max_tokens`` is cut by the content-defined chunker (with its overlap), each piece under the
same context. Heading lines are not chunks by themselves, and a block whose every line is in
``skip`` (the lines of ``memdir init``'s templates) is not indexed: a section with nothing in
it is not a memory.

Daily logs and session notes (``memory/YYYY-MM-DD*.md``) keep the windows of
:func:`memdir.markdown.chunking.chunk_markdown`: a conversation reads as a whole, and its
overlapping windows measured best on LoCoMo.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from memdir.markdown.chunking import Chunk, chunk_markdown, split_lines
from memdir.text import estimate_tokens

#: Bumped whenever the same text would be cut differently (part of the index identity).
#: "2" is skipped: indexes built by an unmerged experiment carry it (a shared benchmark cache
#: held 17 of them), and a clash would reuse their chunks as this version's.
STRUCTURE_VERSION = "3"
#: Consecutive blocks under the same headings share a chunk while their lines fit in this many
#: estimated tokens (docs/benchmarks.md, "Packing structured notes").
PACK_TOKENS = 88
#: Headings kept as a chunk's context: the nearest ones, outermost first.
CONTEXT_HEADINGS = 2

HEADING_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+|$)")
ITEM_RE = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]+\S|[ \t]*$)")
FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
TABLE_RE = re.compile(r"^\s*\|")


def chunk_structured(
    text: str,
    *,
    max_tokens: int = 200,
    overlap_tokens: int = 0,
    skip: frozenset[str] = frozenset(),
    pack_tokens: int | None = None,
) -> list[Chunk]:
    """Cut ``text`` into chunks of blocks under their headings (see the module docstring).

    Args:
        text: the file's content.
        max_tokens: a block longer than this is cut by the content-defined chunker.
        overlap_tokens: that chunker's overlap inside a long block.
        skip: stripped lines that are not content (template text): a block of only these is
            left out, and a title (a level-1 heading) among them is no chunk's context.
        pack_tokens: consecutive blocks under the same headings share a chunk while their
            lines fit in this many estimated tokens (None: :data:`PACK_TOKENS`; 0: one block
            a chunk).

    Returns:
        The chunks in file order; each one's text is its context lines, then its own lines.
    """
    budget = min(max_tokens, PACK_TOKENS if pack_tokens is None else pack_tokens)
    lines = split_lines(text)
    headings: list[tuple[int, str]] = []  # (level, line) of the headings above
    chunks: list[Chunk] = []
    pack: list[int] = []  # first and last line (0-based) of the blocks packed so far
    context: list[str] = []

    def flush() -> None:
        if pack:
            own = lines[pack[0] : pack[1] + 1]
            chunks.extend(_block_chunks(own, pack[0] + 1, context, max_tokens, overlap_tokens))
            pack.clear()

    for kind, first, last in _blocks(lines):
        if kind == "heading":
            flush()
            level = len(HEADING_RE.match(lines[first]).group(1))  # type: ignore[union-attr]
            headings = [h for h in headings if h[0] < level] + [(level, lines[first].rstrip())]
            continue
        own = lines[first : last + 1]
        if all(not line.strip() or line.strip() in skip for line in own):
            flush()
            continue
        if pack and estimate_tokens("\n".join(lines[pack[0] : last + 1])) <= budget:
            pack[1] = last
            continue
        flush()
        titles = [line for level, line in headings if level > 1 or line.strip() not in skip]
        context = titles[-CONTEXT_HEADINGS:]
        pack[:] = [first, last]
    flush()
    return chunks


def _block_chunks(
    own: Sequence[str], first_line: int, context: Sequence[str], max_tokens: int, overlap: int
) -> list[Chunk]:
    """The chunks of one block whose first line is ``first_line`` (1-based)."""
    body = "\n".join(own)
    prefix = "".join(f"{line}\n" for line in context)
    if estimate_tokens(body) <= max_tokens:
        return [Chunk(first_line, first_line + len(own) - 1, prefix + body)]
    out = []
    for piece in chunk_markdown(body, max_tokens=max_tokens, overlap_tokens=overlap):
        out.append(
            replace(
                piece,
                start_line=piece.start_line + first_line - 1,
                end_line=piece.end_line + first_line - 1,
                text=prefix + piece.text,
            )
        )
    return out


def _blocks(lines: Sequence[str]) -> list[tuple[str, int, int]]:
    """``(kind, first, last)`` (0-based, inclusive) of the blocks of ``lines``: ``heading``,
    ``item``, ``fence``, ``table`` or ``paragraph``; blank lines belong to no block."""
    out: list[tuple[str, int, int]] = []
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if FENCE_RE.match(line):
            end = _fence_end(lines, i)
            out.append(("fence", i, end))
            i = end + 1
        elif HEADING_RE.match(line):
            out.append(("heading", i, i))
            i += 1
        elif ITEM_RE.match(line):
            end = _item_end(lines, i)
            out.append(("item", i, end))
            i = end + 1
        elif TABLE_RE.match(line):
            end = i
            while end + 1 < n and TABLE_RE.match(lines[end + 1]):
                end += 1
            out.append(("table", i, end))
            i = end + 1
        else:
            end = i
            while end + 1 < n and _continues_paragraph(lines[end + 1]):
                end += 1
            out.append(("paragraph", i, end))
            i = end + 1
    return out


def _fence_end(lines: Sequence[str], start: int) -> int:
    """The closing fence of the code block opened at ``start`` (the last line if none)."""
    match = FENCE_RE.match(lines[start])
    assert match is not None
    marker = match.group(1)
    for j in range(start + 1, len(lines)):
        close = FENCE_RE.match(lines[j])
        if close and close.group(1)[0] == marker[0] and len(close.group(1)) >= len(marker):
            return j
    return len(lines) - 1


def _item_end(lines: Sequence[str], start: int) -> int:
    """The last line of the list item at ``start``: indented lines (a nested list, a
    continued paragraph, even after a blank line) and unindented lines that continue its
    text without a blank line."""
    end = start
    j = start + 1
    while j < len(lines):
        line = lines[j]
        if not line.strip():
            nxt = next((k for k in range(j + 1, len(lines)) if lines[k].strip()), None)
            if nxt is None or not _indented(lines[nxt]):
                break
            j = nxt
            continue
        if _indented(line):
            if FENCE_RE.match(line.lstrip()):
                fence = _fence_end(lines, j)
                end = j = fence
                j += 1
                continue
            end = j
        elif _continues_paragraph(line) and end == j - 1:
            end = j  # a lazy continuation line
        else:
            break
        j += 1
    return end


def _indented(line: str) -> bool:
    return line.startswith(("  ", "\t"))


def _continues_paragraph(line: str) -> bool:
    return bool(
        line.strip()
        and not HEADING_RE.match(line)
        and not ITEM_RE.match(line)
        and not FENCE_RE.match(line)
        and not TABLE_RE.match(line)
    )


def split_context(text: str, start_line: int, end_line: int) -> tuple[list[str], list[str]]:
    """A chunk's text as ``(context lines, its own lines)``: the heading lines a structured
    chunk starts with (:func:`chunk_structured`) and the lines ``start_line..end_line`` it
    covers. A chunk without context gives ``([], all its lines)``."""
    lines = text.split("\n")
    extra = len(lines) - (end_line - start_line + 1)
    if extra > 0 and all(HEADING_RE.match(line) for line in lines[:extra]):
        return lines[:extra], lines[extra:]
    return [], lines


def block_spans(lines: Sequence[str]) -> list[tuple[int, int]]:
    """``(first, last)`` (0-based, inclusive) of the blocks among a structured chunk's own
    lines (:func:`split_context`): more than one for a packed chunk. A piece of a long block
    cut by the window chunker may read as several blocks too; they are its lines all the same."""
    return [(first, last) for kind, first, last in _blocks(lines) if kind != "heading"]


def heading_title(line: str) -> str:
    """``## Project facts`` → ``Project facts``."""
    return HEADING_RE.sub("", line, count=1).strip().rstrip("#").strip()


__all__ = [
    "PACK_TOKENS",
    "STRUCTURE_VERSION",
    "block_spans",
    "chunk_structured",
    "heading_title",
    "split_context",
]
