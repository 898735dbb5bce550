"""Questions about two things: split them into sub-queries, and merge the sub-queries' rankings
with reserved result slots.

A question such as "What do Jon and Gina both have in common?" or "张三和李四分别住在哪里"
needs evidence about each of two things; one ranking of the whole question tends to fill its
few results with the one that matches best. :func:`split_query` finds such questions and
returns their parts ("What do Jon have in common?", "What do Gina have in common?");
:func:`merge_rankings` gives every sub-query a few reserved places in the results, then fills
the rest from the main ranking.

The split is deliberately narrow (two conjoined names or words, ``both``/``分别``-style
questions, "how many times"): a wrong split costs places that the whole question would have
filled better.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from memdir.search.types import SearchResult
from memdir.text import has_cjk

T = TypeVar("T")

# "Jon and Gina", "Caroline and Melanie" (two capitalised words joined by "and"/"or").
_NAMES = re.compile(r"\b([A-Z][\w'’-]*)\s+(?:and|or|&)\s+([A-Z][\w'’-]*)\b")
_BOTH = re.compile(r"\s*\bboth\b\s*", re.IGNORECASE)
_HOW_MANY_TIMES = re.compile(r"^\s*how\s+(?:many\s+times|often)\s+", re.IGNORECASE)
_AUX = re.compile(r"^(?:has|have|had|did|does|do|is|are|was|were)\s+", re.IGNORECASE)
# Chinese: X 和/与/跟/以及/还是 Y, optionally followed by 分别 / 都 / 各自.
_ZH_JOINERS = ("以及", "还是", "和", "与", "跟", "及")
_ZH_EACH = re.compile(r"(分别|各自|都)")
_WORD = re.compile(r"[\u4e00-\u9fff]{1,8}")


def split_query(query: str) -> list[str]:
    """The parts of a question about two things (empty when it is not one).

    >>> split_query("What do Jon and Gina both have in common?")
    ['What do Jon have in common?', 'What do Gina have in common?']
    >>> split_query("How many times has Melanie gone to the beach?")
    ['Melanie gone to the beach?']
    """
    text = " ".join(query.split())
    if not text:
        return []
    if has_cjk(text):
        return _split_chinese(text)
    match = _NAMES.search(text)
    if match and match.group(1).lower() != match.group(2).lower():
        parts = []
        for name in match.groups():
            part = text[: match.start()] + name + text[match.end() :]
            parts.append(" ".join(_BOTH.sub(" ", part).split()))
        return parts
    times = _HOW_MANY_TIMES.match(text)
    if times:
        rest = _AUX.sub("", text[times.end() :])
        return [rest] if len(rest.split()) >= 2 else []
    return []


def _split_chinese(text: str) -> list[str]:
    """``X和Y分别…`` → ``X…``, ``Y…``: the two words around the first joiner (by jieba's
    segmentation, so that 数据库和缓存 splits into 数据库 and 缓存)."""
    from memdir.text import _cut  # jieba, precise mode (memoised)

    words = list(_cut(text, False))
    for i, word in enumerate(words):
        if word not in _ZH_JOINERS or i == 0 or i + 1 >= len(words):
            continue
        left, right = words[i - 1], words[i + 1]
        if not (_WORD.fullmatch(left) and _WORD.fullmatch(right)):
            continue
        head = "".join(words[: i - 1])
        tail = _ZH_EACH.sub("", "".join(words[i + 2 :]), count=1)
        return [head + left + tail, head + right + tail]
    return []


def merge_rankings(
    rankings: Sequence[Sequence[T]], *, slots: int, ident: Callable[[T], Hashable]
) -> list[T]:
    """One ranking from several: the first ``slots`` items of every ranking, taken in turns
    (best of each first), then the rest of the first ranking, then the rest of the others in
    turns. Items with the same ``ident`` are one item, kept where it is first taken."""
    out: list[T] = []
    seen: set[Hashable] = set()

    def take(item: T) -> None:
        if ident(item) not in seen:
            seen.add(ident(item))
            out.append(item)

    positions = [0] * len(rankings)
    for _ in range(slots):
        for r, ranking in enumerate(rankings):
            while positions[r] < len(ranking) and ident(ranking[positions[r]]) in seen:
                positions[r] += 1
            if positions[r] < len(ranking):
                take(ranking[positions[r]])
                positions[r] += 1
    if rankings:
        for item in rankings[0]:
            take(item)
    longest = max((len(r) for r in rankings), default=0)
    for i in range(longest):
        for ranking in rankings[1:]:
            if i < len(ranking):
                take(ranking[i])
    return out


def passage_id(result: SearchResult) -> tuple[str, int, int]:
    return (result.path, result.start_line, result.end_line)


def without_repeated_lines(results: Sequence[SearchResult]) -> list[SearchResult]:
    """Drop a result that shows lines an earlier one shows (rankings of several queries are
    placed separately, so their passages may overlap)."""
    shown: dict[str, set[int]] = {}
    out = []
    for result in results:
        lines = set(range(result.start_line, result.end_line + 1))
        if lines & shown.get(result.path, set()):
            continue
        shown.setdefault(result.path, set()).update(lines)
        out.append(result)
    return out


__all__ = [
    "merge_rankings",
    "passage_id",
    "split_query",
    "without_repeated_lines",
]
