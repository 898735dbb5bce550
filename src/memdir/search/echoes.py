"""Sources before echoes (docs/design.md#search, step 7): a session archive, or a daily note,
that quotes a line of another note the same search found ranks below that note.

An agent's session archive repeats what it read ("According to MEMORY.md: - Use Postgres
advisory locks…"); a memory flush may write a known fact into the daily log again. Both match
the question as well as the note they quote (the same words, the same meaning), and the agent's
own earlier answer would otherwise become the top "memory". The note that was quoted is the
source; the one quoting it an echo, when it is of a later kind (:func:`source_rank`: curated
notes, then daily logs, then session archives) or, of the same kind, of a later date.

An echo keeps its place in the results (it may hold more than the quote), after its source,
with a score no higher than the source's, and its ``echo_of`` says which result it repeats.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from memdir.search.types import Candidate
from memdir.workspace import archive_date, file_kind, is_daily_log

#: A quoted line must be this long (normalised) to count: "- done", "ok" are not quotes.
MIN_QUOTE_CHARS = 16
_MARKER_RE = re.compile(r"^\s*(?:[-*+>]|\d{1,9}[.)])\s+|^\s*\*\*[^*]{1,40}:\*\*\s*")
_SPACE_RE = re.compile(r"\s+")


def source_rank(path: str) -> tuple[int, str]:
    """How original a file is: curated notes (MEMORY.md, topic notes, skills, extra paths) 0,
    daily logs 1, session archives 2; then its date (earlier is more original)."""
    kind = file_kind(path)
    if kind == "archive":
        return 2, archive_date(path) or ""
    if kind == "daily":
        return 1, is_daily_log(path) or ""
    return 0, ""


def normalise(line: str) -> str:
    """A line as a quote is compared: without its list or quote marker, spaces collapsed,
    lower case."""
    return _SPACE_RE.sub(" ", _MARKER_RE.sub("", line)).strip().lower()


# The same chunks come back search after search: their lines are normalised once.
@lru_cache(maxsize=4096)
def quotable_lines(text: str) -> tuple[str, ...]:
    """The normalised lines of ``text`` long enough to be recognised when quoted."""
    lines = (normalise(line) for line in text.split("\n") if not line.lstrip().startswith("#"))
    return tuple(line for line in lines if len(line) >= MIN_QUOTE_CHARS)


@lru_cache(maxsize=4096)
def normalised_text(text: str) -> str:
    """``text`` with every line normalised (what a quote is looked for in)."""
    return "\n".join(normalise(line) for line in text.split("\n"))


def quotes(echo: str, source_lines: Sequence[str]) -> bool:
    """Whether the (normalised) text ``echo`` holds one of ``source_lines``."""
    return any(line in echo for line in source_lines)


def demote_echoes(ranked: Sequence[Candidate]) -> list[Candidate]:
    """``ranked`` with every echo placed after the source it quotes and scored no higher
    (see the module docstring); the order is otherwise kept."""
    order = list(ranked)
    if len(order) < 2:
        return order
    ranks = {id(c): source_rank(c.chunk.path) for c in order}
    texts = {id(c): normalised_text(c.chunk.text) for c in order}
    moved = True
    while moved:
        moved = False
        for i, echo in enumerate(order):
            if echo.echo_of is not None or ranks[id(echo)] == (0, ""):
                continue
            source = _source_of(echo, order, ranks, texts)
            if source is None:
                continue
            chunk = source.chunk
            echo.echo_of = f"{chunk.path}#L{chunk.start_line}-L{chunk.end_line}"
            echo.score = min(echo.score, source.score)
            j = order.index(source)
            if j > i:
                order.insert(j, order.pop(i))
                moved = True
                break
    return order


def _source_of(
    echo: Candidate,
    order: Sequence[Candidate],
    ranks: dict[int, tuple[int, str]],
    texts: dict[int, str],
) -> Candidate | None:
    """The best-placed candidate of an earlier kind or date that ``echo`` quotes: one of its
    lines whole, or, for a note of an earlier kind, inside a line ("According to MEMORY.md:
    - …")."""
    own = set(quotable_lines(echo.chunk.text))
    for cand in order:
        if cand is echo or cand.chunk.path == echo.chunk.path:
            continue
        if ranks[id(cand)] >= ranks[id(echo)]:
            continue
        lines = quotable_lines(cand.chunk.text)
        if not own.isdisjoint(lines):
            return cand
        if ranks[id(cand)][0] < ranks[id(echo)][0] and quotes(texts[id(echo)], lines):
            return cand
    return None


__all__ = ["MIN_QUOTE_CHARS", "demote_echoes", "normalise", "quotable_lines", "source_rank"]
