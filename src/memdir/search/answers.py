"""The answer line (docs/design.md#search, step 8, "The answer line"): what a question asks for
— a port, a date, an owner, a version, an amount — and which lines of a passage hold it.

A question names its subject and the thing it asks about: "Redis 分布式锁用哪个端口?" is about the
Redis lock and asks for a port. A passage can match the subject closely and still not answer
("决定使用 Redis 分布式锁" says nothing of a port), while another holds the port ("the cache
cluster listens on port 6380"). :func:`asked_slot` reads what is asked from the question's own
words (a wh-word, 哪个/什么/多少/几, or the thing's name: port/端口, owner/负责人…), and
:func:`holds_slot` whether a line holds such a thing: the thing's name or a value of its kind (a
number for a port, a date or a weekday for a time, a version number…).

Two stages use it:

- the order of the results (:func:`answer_first`): when the first result holds no line with the
  asked thing and a later one does — in a line that also holds a word of the question's subject
  — the later one is moved first, and the scores stay with the places: the moved result takes
  the first place's score and each one it passed the score of the place below (on 56 dev
  questions where a result was moved, it answered 21 of them and the one it displaced 10; with
  the scores exchanged they average 0.35 and 0.17, against shares of 0.38 and 0.18: the
  calibrated scores, exchanged, hold);
- the citation of a passage of a windowed note (a daily log, a session archive:
  :func:`answer_lines`): the lines of its window that hold the question's words, and the asked
  thing when there is one, not the whole window (the window stays the snippet).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from memdir.search.terms import found_tokens

_NUMBER = r"(?<![\w.])\d{2,5}(?![\w.])"


@dataclass(frozen=True)
class Slot:
    """A kind of thing a question asks for: the words that ask for it, the words that name it
    in a note, and what a value of it looks like."""

    name: str
    asks: re.Pattern[str]
    names: re.Pattern[str]
    value: re.Pattern[str]


_I = re.IGNORECASE
SLOTS: tuple[Slot, ...] = (
    Slot(
        "port",
        re.compile(r"\bports?\b|端口", _I),
        re.compile(r"\bports?\b|端口|监听|\blisten", _I),
        re.compile(rf"(?:\bports?\b|端口|监听|\blisten\w*|:)\D{{0,12}}{_NUMBER}", _I),
    ),
    Slot(
        "version",
        re.compile(r"\bversions?\b|版本", _I),
        re.compile(r"\bversions?\b|版本|升级|\bupgrad", _I),
        re.compile(r"\bv?\d+\.\d+(?:\.\d+)*\b", _I),
    ),
    Slot(
        "time",
        re.compile(
            r"\bwhen\b|\bwhat (?:date|day|time)\b|\bwhich (?:date|day|week|month)\b|\bdeadline\b"
            r"|什么时候|哪天|哪一天|几号|几点|几月|哪个月|哪周|日期|截止",
            _I,
        ),
        re.compile(r"\bdeadline\b|\bdue\b|截止|上线|发布|\blaunch", _I),
        re.compile(
            r"\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}|\d{1,2}\s*月\s*\d{1,2}\s*[日号]|\d{1,2}:\d{2}"
            r"|周[一二三四五六日天]|星期[一二三四五六日天]|[上下本这]周|明天|后天|昨天|今天|月底|月初"
            r"|\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b"
            r"|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}\b"
            r"|\b\d{1,2}\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b"
            r"|早上|上午|中午|下午|傍晚|晚上|凌晨|半夜|夜里|早场|午场|晚场|\d+\s*点"
            r"|\b(?:morning|afternoon|evening|night|noon|midnight|[ap]\.?m\.?)\b"
            r"|\b(?:tomorrow|yesterday|today|tonight|next|last)\b|\bq[1-4]\b|\b(?:19|20)\d{2}\b",
            _I,
        ),
    ),
    Slot(
        "owner",
        re.compile(r"\bwho\b|\bwhom\b|\bowners?\b|\bowned\b|谁|负责人|哪位", _I),
        re.compile(r"\bowners?\b|\bowned\b|\bin charge\b|\bleads?\b|负责|对接人|\bon-?call\b", _I),
        re.compile(r"@\w+|\b[A-Z][a-z]+\b(?!\.md)|负责人\s*[:：是为]?\s*\S", 0),
    ),
    Slot(
        "amount",
        re.compile(
            r"\bhow (?:many|much|long|big|large|often)\b|多少|几(?!点|号|月)\w|多大|多久|多长", _I
        ),
        re.compile(r"$^", 0),  # an amount is named by its value alone
        re.compile(
            r"\d|[一二两三四五六七八九十百千万]|\b(?:once|twice|thrice|one|two|three|four|five|six"
            r"|seven|eight|nine|ten|dozen|hundred|thousand|several|few)\b",
            _I,
        ),
    ),
)


#: The slots whose values are told apart well enough to reorder results by them. An owner's
#: value (a name) is not: on the dev questions, moving the first result naming someone first
#: answered 2 of 16 owner questions where the order it changed had answered 7.
REORDERING = frozenset({"port", "version", "time", "amount"})


def asked_slot(question: str) -> Slot | None:
    """What ``question`` asks for, or None (a question of another kind, or not a question)."""
    for slot in SLOTS:
        if slot.asks.search(question):
            return slot
    return None


#: Lines that hold no answer, whatever they match: headings and a session archive's header
#: fields (``- archived: 2026-11-22 22:49`` holds a time, not the one asked for).
_NOT_ANSWERS = re.compile(r"^\s*(?:#|- (?:date|session|source|archived|messages): )")


def holds_slot(slot: Slot, line: str) -> bool:
    """Whether ``line`` holds the asked thing: its name or a value of its kind."""
    return bool(slot.value.search(line) or slot.names.search(line))


def _holds_value(slot: Slot, line: str) -> bool:
    return bool(slot.value.search(line))


def line_weights(lines: Sequence[str], weights: Mapping[str, float]) -> list[float]:
    """Each line's share of the question's term weight (``weights``: term → weight, the
    question's words and their translations); 0 for a line that holds no answer (a heading,
    an archive's header field)."""
    total = sum(weights.values()) or 1.0
    out = []
    for line in lines:
        answers = line.strip() and not _NOT_ANSWERS.match(line)
        held = dict.fromkeys(found_tokens(line, weights)) if answers else {}
        out.append(sum(weights.get(t, 0.0) for t in held) / total)
    return out


def answer_lines(
    lines: Sequence[str], weights: Mapping[str, float], slot: Slot | None
) -> tuple[int, int] | None:
    """The lines (first, last: indices into ``lines``) of a window that answer: the line
    holding the most of the question's words — among those holding the asked thing when some
    do — with the next lines while they hold at least half as much. None when no line holds a
    word of the question (a hit by meaning alone: the whole window is the answer)."""
    held = line_weights(lines, weights)
    if not held or max(held) <= 0:
        return None
    ranked = [i for i in range(len(lines)) if held[i] > 0]
    if slot is not None:
        answering = [i for i in ranked if _holds_value(slot, lines[i])]
        ranked = answering or ranked
    best = max(ranked, key=lambda i: (held[i], -i))
    first = last = best
    while last + 1 < len(lines) and held[last + 1] >= held[best] / 2 and lines[last + 1].strip():
        last += 1
    return first, last


def answer_first(
    passages: Sequence[Sequence[str]], weights: Mapping[str, float], slot: Slot | None
) -> int | None:
    """The index of the passage to show first, when it is not the first: the best-placed one
    holding, in a line that also holds a word of the question's subject (not the words that
    name what it asks for), a value of the asked thing — and only when the first passage holds
    none (None: keep the order)."""
    if slot is None or slot.name not in REORDERING or len(passages) < 2:
        return None
    # The question's subject: its words other than those naming what it asks for.
    subject = {
        t: w for t, w in weights.items() if not (slot.asks.search(t) or slot.names.search(t))
    }
    if not subject:
        return None

    def answers(lines: Sequence[str]) -> bool:
        held = line_weights(lines, subject)
        return any(h > 0 and _holds_value(slot, line) for h, line in zip(held, lines, strict=True))

    if answers(passages[0]):
        return None
    for i, lines in enumerate(passages[1:], start=1):
        if answers(lines):
            return i
    return None


__all__ = [
    "REORDERING",
    "SLOTS",
    "Slot",
    "answer_first",
    "answer_lines",
    "asked_slot",
    "holds_slot",
]
