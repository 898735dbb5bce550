"""Line-based chunking of Markdown (docs/design.md#chunking).

A chunk holds whole lines until adding the next line would pass ``max_tokens`` (estimated with
:func:`memdir.text.estimate_tokens`: a CJK character is one token, other text 4 chars a token).
The next chunk starts with the trailing whole lines of the previous one that fit in
``overlap_tokens``. A line longer than a chunk is cut into pieces that keep its line number.
Line numbers are 1-based and inclusive; whitespace-only chunks are dropped.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from memdir.text import estimate_tokens

#: Bumped whenever the same text and settings would be cut differently (the index rebuilds).
CHUNKER_VERSION = "2"


@dataclass(frozen=True)
class Chunk:
    """A run of lines of one file."""

    start_line: int
    end_line: int
    text: str

    @property
    def hash(self) -> str:
        """sha256 of the chunk text (the embedding cache key)."""
        return text_hash(self.text)


def text_hash(text: str) -> str:
    """sha256 hex of ``text`` in UTF-8: the embedding cache key of any embedded text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class _Piece:
    line: int
    text: str
    tokens: int


def chunk_markdown(text: str, *, max_tokens: int = 200, overlap_tokens: int = 120) -> list[Chunk]:
    """Cut ``text`` into overlapping line-based chunks.

    Args:
        text: the file's content.
        max_tokens: the most estimated tokens in one chunk (at least 1).
        overlap_tokens: how many tokens of trailing whole lines to repeat in the next chunk;
            clamped below ``max_tokens``.

    Returns:
        The chunks in file order.
    """
    max_tokens = max(1, max_tokens)
    overlap_tokens = max(0, min(overlap_tokens, max_tokens - 1))
    pieces = _pieces(text, max_tokens)
    chunks: list[Chunk] = []
    current: list[_Piece] = []
    current_tokens = 0
    for piece in pieces:
        if current and current_tokens + piece.tokens > max_tokens:
            chunks.append(_make_chunk(current))
            current = _overlap_tail(current, overlap_tokens)
            current_tokens = sum(p.tokens for p in current)
            while current and current_tokens + piece.tokens > max_tokens:
                current_tokens -= current.pop(0).tokens
        current.append(piece)
        current_tokens += piece.tokens
    if current:
        chunks.append(_make_chunk(current))
    return [c for c in chunks if c.text.strip()]


def _pieces(text: str, max_tokens: int) -> list[_Piece]:
    pieces: list[_Piece] = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # a final newline ends the last line; it does not start another
    for number, raw in enumerate(lines, start=1):
        line = raw[:-1] if raw.endswith("\r") else raw
        tokens = estimate_tokens(line)
        if tokens <= max_tokens:
            pieces.append(_Piece(number, line, tokens))
            continue
        for part in _split_long_line(line, max_tokens):
            pieces.append(_Piece(number, part, estimate_tokens(part)))
    return pieces


#: The end of a sentence (with its closing quotes and following spaces). A long line is cut
#: after one when one lies in the second half of the piece, else after a space, else anywhere.
SENTENCE_ENDS = re.compile(r"[。！？；…!?;]+[”’」』）)\"']*\s*|[.:]\s+")


def _split_long_line(line: str, max_tokens: int) -> list[str]:
    """Cut one line into consecutive parts of at most ``max_tokens`` estimated tokens, at a
    sentence end (or a space) in the second half of each part when there is one."""
    parts: list[str] = []
    pos = 0
    window = max_tokens * 4
    while pos < len(line):
        end = min(len(line), pos + window)
        if estimate_tokens(line[pos:end]) > max_tokens:
            # Binary search the longest prefix that fits (CJK text costs more per char).
            lo, hi = pos + 1, end
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if estimate_tokens(line[pos:mid]) <= max_tokens:
                    lo = mid
                else:
                    hi = mid - 1
            end = lo
        if end < len(line):
            end = _natural_cut(line, pos, end)
        parts.append(line[pos:end])
        pos = end
    return parts


def _natural_cut(line: str, start: int, end: int) -> int:
    """The last sentence end (else space) in the second half of ``line[start:end]``, or ``end``."""
    half = start + (end - start) // 2
    cut = 0
    for match in SENTENCE_ENDS.finditer(line, half, end):
        cut = match.end()
    if cut > half:
        return cut
    space = line.rfind(" ", half, end)
    return space + 1 if space > half else end


def _overlap_tail(pieces: list[_Piece], overlap_tokens: int) -> list[_Piece]:
    """Trailing pieces of the flushed chunk that fit in ``overlap_tokens``."""
    tail: list[_Piece] = []
    total = 0
    for piece in reversed(pieces):
        if total + piece.tokens > overlap_tokens:
            break
        tail.append(piece)
        total += piece.tokens
    tail.reverse()
    return tail


def _make_chunk(pieces: list[_Piece]) -> Chunk:
    lines: list[str] = []
    last_line = -1
    for piece in pieces:
        if piece.line == last_line:
            lines[-1] += piece.text
        else:
            lines.append(piece.text)
            last_line = piece.line
    return Chunk(pieces[0].line, pieces[-1].line, "\n".join(lines))
