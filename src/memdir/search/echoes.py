"""Sources before echoes (docs/design.md#search, step 7): a session archive, or a daily note,
that quotes a line of another note the same search found ranks below that note.

An agent's session archive repeats what it read ("According to MEMORY.md: - Use Postgres
advisory locks…"); a memory flush may write a known fact into the daily log again. Both match
the question as well as the note they quote (the same words, the same meaning), and the agent's
own earlier answer would otherwise become the top "memory". The note that was quoted is the
source; the one quoting it an echo, when it is of a later kind (:func:`source_rank`: curated
notes, then daily logs, then session archives) or, of the same kind, of a later date.

An echo need not quote word for word: an assistant's answer restates the note ("The production
database is PostgreSQL 15, host db-prod-01.internal, port 5432"). A line of the source is
*restated* when the echo holds every number of it and most of its words (:func:`restates`).

An echo keeps its place in the results (it may hold more than the quote), after its source,
with a score no higher than the source's, and its ``echo_of`` says which result it repeats. It
also never lowers its source's score: a result's ``lead`` (how far it stands above the other
candidates, :mod:`memdir.search.relevance`) is measured without its own echoes, so an archive
that restates a note word for word cannot push that note under a recall threshold
(:func:`find_echoes` runs before the scores are computed).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from memdir.search.types import Candidate
from memdir.text import similarity_tokens
from memdir.workspace.layout import archive_date, file_kind, is_daily_log

#: A quoted line must be this long (normalised) to count: "- done", "ok" are not quotes.
MIN_QUOTE_CHARS = 16
#: A restated line has at least this many distinct words (:func:`restates`) …
RESTATE_MIN_WORDS = 4
#: … and the echo holds this share of them, with every number, when the line has numbers …
RESTATE_WITH_NUMBERS = 0.6
#: … or this share when it has none.
RESTATE_WITHOUT_NUMBERS = 0.8
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


@lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    return similarity_tokens(text)


@lru_cache(maxsize=16384)
def _shape(line: str) -> tuple[frozenset[str], frozenset[str]]:
    """A line's distinct words and, among them, its numbers (the same lines come back search
    after search, each compared with every echo)."""
    words = _words(line)
    return words, frozenset(w for w in words if any(ch.isdigit() for ch in w))


def restates(echo: str, line: str) -> bool:
    """Whether the text ``echo`` restates ``line`` (both as written): the line has
    :data:`RESTATE_MIN_WORDS` distinct words or more, and the echo holds every one of its
    numbers and :data:`RESTATE_WITH_NUMBERS` of its words, or, for a line without numbers,
    :data:`RESTATE_WITHOUT_NUMBERS` of them. A later note that changes a number ("the port
    is now 5433") restates nothing."""
    words, numbers = _shape(line)
    if len(words) < RESTATE_MIN_WORDS:
        return False
    held = _words(echo)
    if not numbers <= held:
        return False
    share = len(words & held) / len(words)
    return share >= (RESTATE_WITH_NUMBERS if numbers else RESTATE_WITHOUT_NUMBERS)


def find_echoes(ranked: Sequence[Candidate]) -> dict[int, Candidate]:
    """Each echo among ``ranked`` (by ``seq``) → the candidate it repeats (see the module
    docstring): the best-placed one of an earlier kind or date that it quotes or restates."""
    order = list(ranked)
    if len(order) < 2:
        return {}
    ranks = {id(c): source_rank(c.chunk.path) for c in order}
    texts = {id(c): normalised_text(c.chunk.text) for c in order}
    found: dict[int, Candidate] = {}
    for echo in order:
        if ranks[id(echo)] == (0, ""):
            continue
        source = _source_of(echo, order, ranks, texts)
        if source is not None:
            found[echo.chunk.seq] = source
    return found


def demote_echoes(
    ranked: Sequence[Candidate], echoes: dict[int, Candidate] | None = None
) -> list[Candidate]:
    """``ranked`` with every echo placed after the source it quotes and scored no higher
    (see the module docstring); the order is otherwise kept. ``echoes``: what
    :func:`find_echoes` found (found here when not given)."""
    order = list(ranked)
    if len(order) < 2:
        return order
    if echoes is None:
        echoes = find_echoes(order)
    moved = True
    while moved:
        moved = False
        for i, echo in enumerate(order):
            source = echoes.get(echo.chunk.seq)
            if echo.echo_of is not None or source is None or source not in order:
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
    - …"), or restated (:func:`restates`)."""
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
        if any(restates(echo.chunk.text, line) for line in _own_lines(cand.chunk.text)):
            return cand
    return None


@lru_cache(maxsize=4096)
def _own_lines(text: str) -> tuple[str, ...]:
    """The lines of a chunk that can be restated: not headings, long enough to quote."""
    lines = (line for line in text.split("\n") if not line.lstrip().startswith("#"))
    return tuple(line for line in lines if len(normalise(line)) >= MIN_QUOTE_CHARS)


__all__ = [
    "MIN_QUOTE_CHARS",
    "demote_echoes",
    "find_echoes",
    "normalise",
    "quotable_lines",
    "restates",
    "source_rank",
]
