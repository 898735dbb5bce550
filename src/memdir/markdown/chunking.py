"""Content-defined, line-based chunking of Markdown (docs/design.md#chunking).

A chunk is a run of whole lines of at most ``max_tokens`` estimated tokens
(:func:`memdir.text.estimate_tokens`: a CJK character is one token, other text 4 characters a
token). Where one chunk ends depends on the text, not on where the file's first chunk began:

- once a chunk holds ``min_tokens`` (a quarter of ``max_tokens``), it may end before any line that
  fits; among those candidates the chunk ends before the *strongest* one: a heading (a higher
  level is stronger), then the first line of a paragraph (after a blank line), then a line
  whose hash has the most trailing zero bits (a content-defined cut point, as in rsync and
  content-defined chunking of backups). Ties go to the larger hash value.
- the rest of a file that fits in one chunk stays one chunk unless it holds a heading or a
  paragraph start past ``min_tokens``.

So an edit moves the boundaries of its own chunk and perhaps the next, and the chunks after
that are cut exactly as before: their texts, hashes and vectors are unchanged. With
``overlap_tokens`` (default 0) the next chunk also starts with the trailing whole lines of the
previous one that fit in it. A line longer than a chunk is cut into pieces at sentence ends,
each keeping its line number. Line numbers are 1-based and inclusive; whitespace-only chunks
are dropped.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import zlib
from dataclasses import dataclass

from memdir.text import estimate_tokens

#: Bumped whenever the same text and settings would be cut differently (the index rebuilds).
CHUNKER_VERSION = "4"


@dataclass(frozen=True)
class Chunk:
    """A run of lines of one file.

    ``start_col``/``end_col`` say where a chunk that begins or ends inside a long line (one cut
    into pieces) does so, as character offsets in that line; ``0``/``None`` for whole lines.
    """

    start_line: int
    end_line: int
    text: str
    start_col: int = 0
    end_col: int | None = None

    @property
    def hash(self) -> str:
        """sha256 of the chunk text (the embedding cache key)."""
        return text_hash(self.text)


def text_hash(text: str) -> str:
    """sha256 hex of ``text`` in UTF-8: the embedding cache key of any embedded text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


#: Strength of a cut before a paragraph's first line (a heading of level h: 200 − h; any
#: other line: the trailing zero bits of its hash, 0–32).
PARAGRAPH = 100
_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]|$)")


@dataclass(frozen=True)
class Piece:
    line: int
    text: str
    tokens: int
    #: Where the piece starts in its line, and whether it ends the line.
    col: int
    last: bool
    #: How good a place to end the previous chunk the start of this piece is (see
    #: :func:`_strength`), then a tie-break that depends only on the piece's text.
    rank: tuple[int, int]


def chunk_markdown(
    text: str,
    *,
    max_tokens: int = 200,
    overlap_tokens: int = 0,
    min_tokens: int | None = None,
) -> list[Chunk]:
    """Cut ``text`` into content-defined, line-based chunks (see the module docstring).

    The file is first cut into *tiles* at content-defined places (:func:`_next_cut`); each
    chunk is one tile preceded by the trailing whole lines before it that fit in
    ``overlap_tokens`` and in what the tile leaves of ``max_tokens``. A tile holds at most
    ``max_tokens`` tokens without overlap; with it, about what greedy chunks advance by
    (``max_tokens − overlap_tokens``, up to a quarter more), so the chunks are about as
    many and as long as greedy ones, and their boundaries still depend only on the text
    around them.

    Args:
        text: the file's content.
        max_tokens: the most estimated tokens in one chunk (at least 1).
        overlap_tokens: how many tokens of trailing whole lines to repeat in the next chunk;
            clamped below ``max_tokens``.
        min_tokens: a tile ends at a content-defined place only once it holds this many
            tokens; default a quarter of ``max_tokens`` without overlap, half of a tile's
            usual size with it (the wider the window, the likelier an edit's shifted window
            still holds the same strongest cut).

    Returns:
        The chunks in file order.
    """
    max_tokens = max(1, max_tokens)
    overlap_tokens = max(0, min(overlap_tokens, max_tokens - 1))
    if overlap_tokens:
        step = max_tokens - overlap_tokens
        high = min(max_tokens, step + step // 4)
        default_low = step // 2
    else:
        high, default_low = max_tokens, max_tokens // 4
    low = default_low if min_tokens is None else max(0, min(min_tokens, high))
    pieces = line_pieces(text, max_tokens)
    cuts = [0]
    while cuts[-1] < len(pieces):
        cuts.append(_next_cut(pieces, cuts[-1], cuts[-1], low, high))
    chunks: list[Chunk] = []
    floor = 0  # where the previous chunk starts: no chunk starts before it
    for begin, end in itertools.pairwise(cuts):
        if not any(p.text.strip() for p in pieces[begin:end]):
            continue  # a blank tile: its overlap alone would repeat the previous chunk
        start = begin
        if overlap_tokens and chunks:
            room = max_tokens - sum(p.tokens for p in pieces[begin:end])
            start = _overlap_start(pieces, floor, begin, min(overlap_tokens, room))
            if start == floor:
                chunks.pop()  # this chunk holds the previous one whole: it replaces it
        chunks.append(make_chunk(pieces[start:end]))
        floor = start
    return [c for c in chunks if c.text.strip()]


def _next_cut(pieces: list[Piece], start: int, new: int, low: int, high: int) -> int:
    """Where the run that begins at ``start`` ends (exclusive): before the strongest piece
    among those it may end before, i.e. once it holds ``low`` tokens, while it fits in
    ``high``, and after at least one piece from ``new`` on."""
    tokens = 0
    at = start
    candidates: list[int] = []
    while at < len(pieces):
        if at > new and tokens >= low:
            candidates.append(at)
        if at > start and tokens + pieces[at].tokens > high:
            break
        tokens += pieces[at].tokens
        at += 1
    if at == len(pieces):  # the rest fits: cut only where the text has a natural break
        candidates = [c for c in candidates if pieces[c].rank[0] >= PARAGRAPH]
        if not candidates:
            return at
    if not candidates:
        return max(at, new + 1)
    return max(candidates, key=lambda c: (pieces[c].rank, c))


def _overlap_start(pieces: list[Piece], floor: int, cut: int, budget: int) -> int:
    """The first piece of the chunk whose tile begins at ``cut``: the trailing whole lines
    before it that fit in ``budget`` tokens, not before ``floor``."""
    start = cut
    total = 0
    while start > floor:
        previous = pieces[start - 1]
        if total + previous.tokens > budget:
            break
        total += previous.tokens
        start -= 1
    # Whole lines only: never begin inside a line that was cut into pieces.
    while 0 < start < cut and pieces[start].line == pieces[start - 1].line:
        start += 1
    return start


def _strength(text: str, previous_blank: bool) -> int:
    heading = _HEADING_RE.match(text)
    if heading:
        return 2 * PARAGRAPH - len(heading.group(1))
    if not text.strip():
        return -1
    if previous_blank:
        return PARAGRAPH
    value = zlib.crc32(text.encode("utf-8", "surrogatepass"))
    return min(32, (value & -value).bit_length() - 1) if value else 32


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` as the chunker numbers them: split at ``\\n``, a final newline
    starting no extra line, a line's trailing ``\\r`` (CRLF files) dropped."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # a final newline ends the last line; it does not start another
    return [raw[:-1] if raw.endswith("\r") else raw for raw in lines]


def line_pieces(text: str, max_tokens: int) -> list[Piece]:
    """The lines of ``text``, a line longer than ``max_tokens`` cut into pieces, each with its
    estimated tokens and how strong a place to cut before it is."""
    pieces: list[Piece] = []
    previous_blank = True
    for number, line in enumerate(split_lines(text), start=1):
        tokens = estimate_tokens(line)
        parts = [line] if tokens <= max_tokens else _split_long_line(line, max_tokens)
        col = 0
        for n, part in enumerate(parts):
            strength = _strength(part, previous_blank) if n == 0 else _strength(part, False)
            if n and strength >= PARAGRAPH:  # "#" inside a long line is not a heading
                strength = 0
            size = tokens if len(parts) == 1 else estimate_tokens(part)
            tie = zlib.adler32(part.encode("utf-8", "surrogatepass"))
            last = n == len(parts) - 1
            pieces.append(Piece(number, part, size, col, last, (strength, tie)))
            col += len(part)
        previous_blank = not line.strip()
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


def make_chunk(pieces: list[Piece]) -> Chunk:
    """The chunk of consecutive ``pieces`` (the pieces of one long line joined again)."""
    lines: list[str] = []
    last_line = -1
    for piece in pieces:
        if piece.line == last_line:
            lines[-1] += piece.text
        else:
            lines.append(piece.text)
            last_line = piece.line
    end = pieces[-1]
    return Chunk(
        pieces[0].line,
        end.line,
        "\n".join(lines),
        pieces[0].col,
        None if end.last else end.col + len(end.text),
    )
