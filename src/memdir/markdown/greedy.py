"""Greedy line-based chunking (chunker version 2): how memdir cut Markdown before
content-defined boundaries (docs/design.md#chunking).

A chunk holds whole lines until adding the next line would pass ``max_tokens``; the next chunk
starts with the trailing whole lines of the previous one that fit in ``overlap_tokens``. An
index built with it keeps it (``[chunking] boundaries = "auto"``), so upgrading memdir does not
re-embed a vault whose chunks would all move; ``boundaries = "content"`` switches.
"""

from __future__ import annotations

from memdir.markdown.chunking import Chunk, Piece, line_pieces, make_chunk

#: The chunker version an index records when it was cut greedily.
GREEDY_VERSION = "2"


def chunk_greedy(text: str, *, max_tokens: int = 200, overlap_tokens: int = 120) -> list[Chunk]:
    """Cut ``text`` into overlapping greedy chunks (see the module docstring)."""
    max_tokens = max(1, max_tokens)
    overlap_tokens = max(0, min(overlap_tokens, max_tokens - 1))
    chunks: list[Chunk] = []
    current: list[Piece] = []
    current_tokens = 0
    for piece in line_pieces(text, max_tokens):
        if current and current_tokens + piece.tokens > max_tokens:
            chunks.append(make_chunk(current))
            current = _overlap_tail(current, overlap_tokens)
            current_tokens = sum(p.tokens for p in current)
            while current and current_tokens + piece.tokens > max_tokens:
                current_tokens -= current.pop(0).tokens
        current.append(piece)
        current_tokens += piece.tokens
    if current:
        chunks.append(make_chunk(current))
    return [c for c in chunks if c.text.strip()]


def _overlap_tail(pieces: list[Piece], overlap_tokens: int) -> list[Piece]:
    """Trailing pieces of the flushed chunk that fit in ``overlap_tokens``."""
    tail: list[Piece] = []
    total = 0
    for piece in reversed(pieces):
        if total + piece.tokens > overlap_tokens:
            break
        tail.append(piece)
        total += piece.tokens
    tail.reverse()
    return tail
