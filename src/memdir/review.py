"""``memdir review``: what a person should look at once a week. It proposes; it never writes.

The report (:class:`ReviewReport`), built from the memory files (MEMORY.md and ``memory/**``;
session archives and extra paths are left out: transcripts and the person's own documents are
not facts to settle):

- **near duplicates**: two fact lines in different places whose words overlap (Jaccard over
  :func:`memdir.text.similarity_tokens` ≥ :data:`DUPLICATE_JACCARD`), with both places; a
  promoted MEMORY.md line and the daily note it came from are one fact, not a duplicate;
- **likely contradictions**: two lines about the same subject (the words left when the value,
  the kind's words and the words stating a change are taken out overlap ≥
  :data:`SUBJECT_JACCARD`, or one is almost wholly inside the other: ``青鸟`` and
  ``青鸟项目``) that give different values of one kind: ports, versions, dates, owners
  (:data:`VALUE_PATTERNS`, English and Chinese: ``端口改成了 9095``, ``负责人是王伟``,
  ``由李娜负责``); a line giving two values of a kind, or correcting one ("6380, not 6379",
  "no longer", "instead of"), is not read for a value;
- **open todos** older than ``todo_days``: ``- [ ]`` items anywhere and the bullets of
  MEMORY.md's Todos section; the age is the audit record that wrote the line, else the daily
  log's date, else at least the time since the file last changed;
- **MEMORY.md budget** (10,000 chars): person vs generated text and what dreaming evicts first;
- **never recalled**: daily-log lines older than ``todo_days`` that no search has returned
  (dreaming can only promote what searches recall);
- **not indexed**: files changed since the last sync, indexed files that are gone, files the
  index could not take (binary, too large…).

Only pairs with at least one side changed within ``since`` are listed (all with ``since`` None).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from memdir.audit.provenance import Provenance
from memdir.dreaming.budget import BudgetUsage, budget_usage
from memdir.dreaming.store import RecallEntry
from memdir.errors import MemdirError
from memdir.index.sync import DirtyState
from memdir.markdown.generated import KEY_RE
from memdir.markdown.sections import find_section, parse_sections
from memdir.text import jaccard, similarity_tokens
from memdir.workspace.layout import MEMORY_FILE, Workspace, file_kind, is_daily_log

DUPLICATE_JACCARD = 0.8
SUBJECT_JACCARD = 0.5
MIN_FACT_CHARS = 12
MAX_LISTED = 50
#: A word shared by more lines than this does not make them candidates for one subject.
MAX_POSTING = 200
_SOURCE_RE = re.compile(r"<!-- memdir:promoted (\S+?)#L(\d+)-L(\d+) ")
_SKIP_RE = re.compile(r"^\s*(?:#|<!--|```|\|)")
_TODO_OPEN_RE = re.compile(r"^\s*[-*+] \[ \]\s+\S")
_BULLET_RE = re.compile(r"^\s*[-*+]\s+\S")
_SINCE_RE = re.compile(r"^(\d+)\s*([hdw])$")
_CORRECTION_RE = re.compile(
    r"\b(?:not|no longer|instead of|rather than|used to|formerly|previously)\b|不是|而非|以前", re.I
)
#: A Chinese personal name as notes write it (two or three characters), or a capitalised one.
_NAME = r"([\u4e00-\u9fff]{2,3}|[A-Z][a-z]+)"
#: How a Chinese line states or changes a value: 是 / 为 / ：/ 改成了 / 换成 / 升级到 …
_SETS = (
    r"(?:是|为|:|：|用|在|改成了?|改为|改到了?|换成了?|调整为|调到了?|变成了?|变为|"
    r"升级到了?|升到了?|更新到了?|推迟到了?|提前到了?|定在|定为)?"
)

#: kind → patterns whose first group is the value. Chinese forms included.
VALUE_PATTERNS: dict[str, tuple[re.Pattern[str], ...]] = {
    "port": (
        re.compile(r"\bports?\s*(?:is|=|:|of|to|on)?\s*(\d{2,5})\b", re.I),
        re.compile(r"\b(?:listens?|runs?|served?|bound)\s+on\s+(?:port\s+)?(\d{2,5})\b", re.I),
        re.compile(r"\b[a-z][\w.-]*:(\d{2,5})\b", re.I),
        re.compile(rf"端口号?\s*{_SETS}\s*(\d{{2,5}})(?!\d)"),
    ),
    "version": (
        re.compile(r"\bv(\d+(?:\.\d+)+)\b", re.I),
        re.compile(r"\bversion\s*(?:is|=|:)?\s*(\d+(?:\.\d+)*)\b", re.I),
        re.compile(r"\b[A-Za-z][A-Za-z+#-]{1,20}\s(\d+\.\d+(?:\.\d+)*)\b"),
        re.compile(rf"版本号?\s*{_SETS}\s*v?(\d+(?:\.\d+)*)"),
        re.compile(r"(?:升级|升|更新|回滚|降级)到了?\s*v?(\d+(?:\.\d+)+)"),
    ),
    "date": (
        re.compile(r"(?<![\d-])(\d{4}-\d{2}-\d{2})(?![\d-])"),
        re.compile(
            r"\b((?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2})\b", re.I
        ),
        re.compile(r"(?<!\d)(\d{1,2}月\d{1,2}[日号])"),
    ),
    "owner": (
        re.compile(r"\b([A-Z][a-z]+)\s+(?:owns|maintains|is responsible for)\b"),
        re.compile(r"\b(?:owned|maintained|run)\s+by\s+([A-Z][a-z]+)\b"),
        re.compile(r"\bowner\s*(?:is|=|:)\s*([A-Z][a-z]+)\b", re.I),
        re.compile(rf"负责人\s*{_SETS}\s*{_NAME}"),
        re.compile(rf"(?:由|归|是|换成了?|改成了?|交给了?)\s*{_NAME}\s*(?:来)?负责(?!人)"),
        re.compile(rf"(?:^|[，,。；;\s]){_NAME}\s*(?:来)?负责(?!人)"),
    ),
}
#: Words that name the kind of value or the change, not its subject.
_KIND_WORDS = {
    "port": ("ports", "port", "listens", "listen", "runs", "run", "on", "端口号", "端口"),
    "version": ("version", "v", "版本号", "版本", "升级", "更新", "回滚", "降级"),
    "date": ("日期", "时间", "推迟", "提前"),
    "owner": ("owns", "own", "owner", "owned", "maintains", "maintained", "by", "负责人", "负责",
              "现在", "接手"),
}  # fmt: skip
_CHANGE_WORDS_RE = re.compile(
    r"改成了?|改为|改到了?|换成了?|调整为|调到了?|变成了?|变为|定在|定为|到了?|是|为|由|归|的|了|现在"
)
_SUBJECT_MIN = 0.75  # containment of the smaller subject in the other (see subject_similarity)


@dataclass(frozen=True)
class Fact:
    """One content line of a memory file."""

    path: str
    line: int
    text: str
    recent: bool

    @property
    def citation(self) -> str:
        return f"{self.path}#L{self.line}"

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "text": self.text, "citation": self.citation}


@dataclass(frozen=True)
class Pair:
    """Two places: a near duplicate (``kind`` empty) or a contradiction of ``kind``."""

    a: Fact
    b: Fact
    similarity: float
    kind: str = ""
    values: tuple[str, str] = ("", "")

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"a": self.a.to_dict(), "b": self.b.to_dict()}
        data["similarity"] = round(self.similarity, 3)
        if self.kind:
            data["kind"] = self.kind
            data["values"] = list(self.values)
        return data


@dataclass(frozen=True)
class Todo:
    """An open todo and how old it is (``exact`` False: at least that old)."""

    fact: Fact
    age_days: int
    exact: bool

    def to_dict(self) -> dict[str, Any]:
        return {**self.fact.to_dict(), "age_days": self.age_days, "age_exact": self.exact}


@dataclass
class ReviewReport:
    """Everything ``memdir review`` proposes (see the module docstring)."""

    since: str
    duplicates: list[Pair] = field(default_factory=list)
    contradictions: list[Pair] = field(default_factory=list)
    todos: list[Todo] = field(default_factory=list)
    budget: BudgetUsage | None = None
    never_recalled: list[Fact] = field(default_factory=list)
    not_indexed: list[dict[str, str]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    #: Lines two hosts changed differently, both kept by ``memdir team sync``
    #: (:mod:`memdir.team.disagreements`), while the file still holds both.
    disagreements: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "since": self.since,
            "duplicates": [p.to_dict() for p in self.duplicates],
            "contradictions": [p.to_dict() for p in self.contradictions],
            "todos": [t.to_dict() for t in self.todos],
            "budget": self.budget.to_dict() if self.budget is not None else None,
            "never_recalled": [f.to_dict() for f in self.never_recalled],
            "not_indexed": self.not_indexed,
            "disagreements": self.disagreements,
            "counts": self.counts,
        }


def parse_since(value: str | None, now: datetime) -> datetime | None:
    """``7d`` / ``2w`` / ``12h`` / an ISO date → the start of the window; ``all`` → None.

    Raises:
        ValueError: anything else.
    """
    if value is None or value.strip().lower() in ("", "all"):
        return None
    text = value.strip().lower()
    match = _SINCE_RE.match(text)
    if match:
        n, unit = int(match.group(1)), match.group(2)
        hours = {"h": 1, "d": 24, "w": 24 * 7}[unit] * n
        return now - timedelta(hours=hours)
    return datetime.fromisoformat(text)


def fact_lines(path: str, lines: Sequence[str], recent: bool) -> list[Fact]:
    """The lines of a file worth comparing: not blank, not headings, comments, fences or
    tables, at least :data:`MIN_FACT_CHARS` characters."""
    out = []
    for n, text in enumerate(lines, 1):
        if len(text.strip()) < MIN_FACT_CHARS or _SKIP_RE.match(text):
            continue
        out.append(Fact(path, n, text.rstrip(), recent))
    return out


def near_duplicates(facts: Sequence[Fact], threshold: float = DUPLICATE_JACCARD) -> list[Pair]:
    """Pairs of facts in different places whose words overlap ≥ ``threshold``; at least one
    recent; a promoted line and its source are not a pair."""
    tokens = [similarity_tokens(_words(f.text)) for f in facts]
    pairs = []
    for i, j in _candidate_pairs(tokens, threshold):
        a, b = facts[i], facts[j]
        if not (a.recent or b.recent) or _promoted_from(a, b) or _promoted_from(b, a):
            continue
        small, large = sorted((len(tokens[i]), len(tokens[j])))
        if small < threshold * large:
            continue
        score = jaccard(tokens[i], tokens[j])
        if score >= threshold:
            pairs.append(Pair(a, b, score))
    return sorted(pairs, key=lambda p: -p.similarity)


def contradictions(facts: Sequence[Fact]) -> list[Pair]:
    """Pairs that give different values of one kind about the same subject (at least one
    recent)."""
    by_kind: dict[str, list[tuple[Fact, str, frozenset[str]]]] = defaultdict(list)
    for fact in facts:
        words = _words(fact.text)
        if _CORRECTION_RE.search(words):
            continue
        for kind, patterns in VALUE_PATTERNS.items():
            found = {m.group(1): m.span(1) for p in patterns for m in p.finditer(words)}
            values = {v.lower() for v in found}
            if len(values) != 1:
                continue  # none, or two values in one line ("6380, not 6379")
            raw, value = next(iter(found)), values.pop()
            subject = fact_subject(words, raw, kind)
            if subject:
                by_kind[kind].append((fact, value, subject))
    pairs = []
    for kind, items in by_kind.items():
        for i, j in _sharing_pairs([s for _, _, s in items]):
            (a, va, sa), (b, vb, sb) = items[i], items[j]
            if va == vb or not (a.recent or b.recent) or a.citation == b.citation:
                continue
            if _promoted_from(a, b) or _promoted_from(b, a):
                continue
            score = subject_similarity(sa, sb)
            if score >= SUBJECT_JACCARD:
                pairs.append(Pair(a, b, score, kind, (va, vb)))
    return sorted(pairs, key=lambda p: -p.similarity)


def fact_subject(words: str, value: str, kind: str) -> frozenset[str]:
    """What a line says a value *of*: its words without the value, the words naming the kind
    of value (port, 端口, 负责人…) and the words that state or change it (是, 改成了…), as
    similarity tokens. Taken out of the text before tokenising, so that no Chinese bigram
    spans a value and its subject (``青鸟负责人陈静`` → ``青鸟``)."""
    text = words.replace(value, " ")
    for word in sorted(_KIND_WORDS[kind], key=len, reverse=True):
        if re.fullmatch(r"[a-z]+", word):
            text = re.sub(rf"\b{word}\b", " ", text, flags=re.I)
        else:
            text = text.replace(word, " ")
    text = _CHANGE_WORDS_RE.sub(" ", text)
    return frozenset(similarity_tokens(text))


def subject_similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """How surely two subjects are one: their Jaccard similarity, or, when the smaller is
    almost wholly inside the larger (``青鸟`` in ``青鸟项目``, ``payment-service`` in ``支付服务
    payment-service``) and shares a word of some length, 0.9 of that containment."""
    if not a or not b:
        return 0.0
    shared = a & b
    score = jaccard(a, b)
    containment = len(shared) / min(len(a), len(b))
    if containment >= _SUBJECT_MIN and any(len(t) >= 2 for t in shared):
        score = max(score, 0.9 * containment)
    return score


def open_todos(
    candidates: Iterable[tuple[Fact, datetime | None, datetime]], now: datetime, days: int
) -> list[Todo]:
    """Todos older than ``days``, oldest first, from (fact, when it was written if known, when
    its file last changed)."""
    out = []
    for fact, written, changed in candidates:
        exact = written is not None
        age = (now - (written or changed)).days
        if age > days:
            out.append(Todo(fact, age, exact))
    return sorted(out, key=lambda t: -t.age_days)


def is_open_todo(text: str) -> bool:
    return bool(_TODO_OPEN_RE.match(text))


def is_bullet(text: str) -> bool:
    return bool(_BULLET_RE.match(text)) and "[x]" not in text.lower()[:8]


def never_recalled(
    facts: Sequence[Fact], entries: Sequence[RecallEntry], now: datetime, days: int
) -> list[Fact]:
    """Daily-log bullets older than ``days`` that no recall entry covers, oldest first."""
    covered: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for entry in entries:
        covered[entry.path].append((entry.start_line, entry.end_line))
    out = []
    for fact in facts:
        day = is_daily_log(fact.path)
        if day is None or not _BULLET_RE.match(fact.text):
            continue
        if (now - datetime.fromisoformat(day)).days <= days:
            continue
        if not any(s <= fact.line <= e for s, e in covered.get(fact.path, ())):
            out.append(fact)
    return sorted(out, key=lambda f: (f.path, f.line))


def build_review(
    workspace: Workspace,
    *,
    provenance: Provenance,
    recalls: Sequence[RecallEntry],
    dirty: DirtyState,
    file_warnings: dict[str, str],
    now: datetime,
    since: datetime | None,
    since_label: str,
    todo_days: int,
) -> ReviewReport:
    """Read the memory files and assemble the report (see the module docstring)."""
    report = ReviewReport(since_label)
    facts: list[Fact] = []
    todos: list[tuple[Fact, datetime | None, datetime]] = []
    memory_text = ""
    for entry in workspace.iter_files():
        kind = file_kind(entry.path)
        if entry.source != "memory" or kind not in ("memory", "daily", "topic"):
            continue
        try:
            text = workspace.read_file(entry.path).decode("utf-8", "replace")
        except (OSError, MemdirError):
            continue
        changed = datetime.fromtimestamp(entry.mtime_ns / 1e9) if entry.mtime_ns > 0 else now
        day = is_daily_log(entry.path)
        recent = since is None or changed >= since
        if day is not None and since is not None:
            recent = datetime.fromisoformat(day) >= since.replace(hour=0, minute=0, second=0)
        lines = text.splitlines()
        if entry.path == MEMORY_FILE:
            memory_text = text
        file_facts = fact_lines(entry.path, lines, recent)
        facts.extend(file_facts)
        todo_lines = _todo_section(lines) if entry.path == MEMORY_FILE else set()
        for fact in file_facts:
            if is_open_todo(fact.text) or (fact.line in todo_lines and is_bullet(fact.text)):
                written = provenance.written_time(fact.path, fact.text)
                if written is None and day is not None:
                    written = datetime.fromisoformat(day)
                when = written.replace(tzinfo=None) if written is not None else None
                todos.append((fact, when, changed))
    report.duplicates = near_duplicates(facts)[:MAX_LISTED]
    report.contradictions = contradictions(facts)[:MAX_LISTED]
    report.todos = open_todos(todos, now, todo_days)[:MAX_LISTED]
    report.budget = budget_usage(memory_text)
    report.never_recalled = never_recalled(facts, recalls, now, todo_days)
    report.not_indexed = [
        *({"path": e.path, "why": "changed since the last sync"} for e in dirty.changed),
        *({"path": p, "why": "indexed, but the file is gone"} for p in dirty.deleted),
        *({"path": p, "why": w} for p, w in sorted(file_warnings.items())),
    ]
    report.counts = {
        "facts": len(facts),
        "duplicates": len(report.duplicates),
        "contradictions": len(report.contradictions),
        "todos": len(report.todos),
        "never_recalled": len(report.never_recalled),
        "not_indexed": len(report.not_indexed),
    }
    report.never_recalled = report.never_recalled[:MAX_LISTED]
    return report


def _todo_section(lines: list[str]) -> set[int]:
    """1-based numbers of the lines in MEMORY.md's Todos section."""
    text = "\n".join(lines) + "\n"
    found = find_section(parse_sections(text), "todos")
    if found is None:
        return set()
    return set(range(found.heading_line + 2, found.end + 1))


def _candidate_pairs(
    tokens: Sequence[frozenset[str]], threshold: float
) -> Iterable[tuple[int, int]]:
    """Index pairs that may reach Jaccard ``threshold`` (prefix filtering: with the words of
    every set in one global order, rarest first, two sets that overlap that much share a word
    among the first ``n - ceil(threshold·n) + 1`` of each)."""
    frequency: dict[str, int] = defaultdict(int)
    for words in tokens:
        for word in words:
            frequency[word] += 1
    posting: dict[str, list[int]] = defaultdict(list)
    for i, words in enumerate(tokens):
        prefix = len(words) - math.ceil(threshold * len(words)) + 1
        for word in sorted(words, key=lambda w: (frequency[w], w))[:prefix]:
            posting[word].append(i)
    seen: set[tuple[int, int]] = set()
    for ids in posting.values():
        for x, i in enumerate(ids):
            for j in ids[x + 1 :]:
                if (i, j) not in seen:
                    seen.add((i, j))
                    yield i, j


def _sharing_pairs(tokens: Sequence[frozenset[str]]) -> Iterable[tuple[int, int]]:
    """Index pairs whose token sets share a word (candidates for
    :func:`subject_similarity`, which containment makes unfit for Jaccard's prefix filter);
    a word in more than :data:`MAX_POSTING` sets is too common to pair on."""
    posting: dict[str, list[int]] = defaultdict(list)
    for i, words in enumerate(tokens):
        for word in words:
            posting[word].append(i)
    seen: set[tuple[int, int]] = set()
    for ids in posting.values():
        if len(ids) > MAX_POSTING:
            continue
        for x, i in enumerate(ids):
            for j in ids[x + 1 :]:
                if (i, j) not in seen:
                    seen.add((i, j))
                    yield i, j


def _words(text: str) -> str:
    """A line without its promotion marker and list marker."""
    return re.sub(r"^\s*[-*+]\s+(?:\[[ xX]\]\s+)?", "", KEY_RE.sub("", text)).strip()


def _promoted_from(line: Fact, source: Fact) -> bool:
    """Whether ``line`` (in MEMORY.md) was promoted from ``source``'s lines."""
    if line.path != MEMORY_FILE:
        return False
    match = _SOURCE_RE.search(line.text)
    return (
        match is not None
        and match.group(1) == source.path
        and int(match.group(2)) <= source.line <= int(match.group(3))
    )
