"""Chunk texts kept once per file (docs/design.md#engines): with 120 of every 200 tokens
repeated in the next chunk, storing each chunk's text would hold the notes ~2.5 times; the
SQLite index keeps one *body* per file instead — the lines its chunks cover, as the chunker saw
them — and cuts a chunk's text out of it by line range (and columns, for a piece of a long
line).

:func:`file_body` builds the body from a file's chunks and says which chunks it cannot give
back exactly (none, unless the chunker changes: the store then keeps those chunks' own text);
:func:`chunk_text` cuts a text out of a body's lines. :class:`BodyCache` keeps the split lines
of the most recently read files.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol


class Span(Protocol):
    """A chunk and where it is in its file (``NewChunk`` and ``markdown.Chunk`` have these)."""

    @property
    def start_line(self) -> int: ...
    @property
    def end_line(self) -> int: ...
    @property
    def start_col(self) -> int: ...
    @property
    def end_col(self) -> int | None: ...
    @property
    def text(self) -> str: ...
    @property
    def hash(self) -> str: ...


def chunk_text(
    lines: Sequence[str], start_line: int, end_line: int, start_col: int, end_col: int | None
) -> str:
    """Lines ``start_line..end_line`` (1-based, inclusive) of ``lines``, the first from
    character ``start_col``, the last up to ``end_col``."""
    part = list(lines[start_line - 1 : end_line])
    if not part:
        return ""
    if end_col is not None:
        part[-1] = part[-1][:end_col]
    part[0] = part[0][start_col:]
    return "\n".join(part)


def file_body(chunks: Sequence[Span]) -> tuple[str, set[int]]:
    """The body of a file with these chunks, and the positions (in ``chunks``) of those whose
    text it does not give back exactly (they keep their own text: a structured note's chunks,
    whose text starts with their headings, docs/design.md "Structured notes"). Lines that only
    such chunks cover, and lines no chunk covers, are left empty; a long line cut into pieces
    is put together from its pieces."""
    lines = _body_lines(chunks)
    wrong = _not_given_back(lines, chunks)
    if wrong:
        kept = [c for i, c in enumerate(chunks) if i not in wrong]
        lines = _body_lines(kept)
        wrong |= _not_given_back(lines, chunks) - wrong
    return "\n".join(lines), wrong


def _not_given_back(lines: Sequence[str], chunks: Sequence[Span]) -> set[int]:
    return {
        i
        for i, c in enumerate(chunks)
        if hashlib.sha256(
            chunk_text(lines, c.start_line, c.end_line, c.start_col, c.end_col).encode("utf-8")
        ).hexdigest()
        != c.hash
    }


def _body_lines(chunks: Sequence[Span]) -> list[str]:
    """The file's lines as these chunks give them (a line no chunk covers is empty)."""
    whole: dict[int, str] = {}
    pieces: dict[int, dict[int, str]] = {}
    for chunk in chunks:
        parts = chunk.text.split("\n")
        if len(parts) != chunk.end_line - chunk.start_line + 1:
            continue
        for i, part in enumerate(parts):
            line = chunk.start_line + i
            col = chunk.start_col if i == 0 else 0
            cut_end = i == len(parts) - 1 and chunk.end_col is not None
            if col == 0 and not cut_end:
                whole[line] = part
            else:
                pieces.setdefault(line, {})[col] = part
    for line, found in pieces.items():
        if line in whole:
            continue
        text = ""
        for col in sorted(found):
            piece = found[col]
            if col > len(text):
                text += "\x00" * (col - len(text))  # a gap no chunk covers
            text = text[:col] + piece + text[col + len(piece) :]
        whole[line] = text
    last = max(whole, default=0)
    return [whole.get(n, "") for n in range(1, last + 1)]


class BodyCache:
    """The split lines of recently read file bodies, keyed by file id and content hash (a
    changed file has a new hash, so it is never served stale)."""

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._lines: OrderedDict[tuple[int, str], list[str]] = OrderedDict()
        self._lock = threading.Lock()  # searches and the background embedder share a store

    def get(self, key: tuple[int, str]) -> list[str] | None:
        with self._lock:
            found = self._lines.get(key)
            if found is not None:
                self._lines.move_to_end(key)
            return found

    def put(self, key: tuple[int, str], lines: list[str]) -> None:
        with self._lock:
            self._lines[key] = lines
            while len(self._lines) > self._size:
                self._lines.popitem(last=False)
