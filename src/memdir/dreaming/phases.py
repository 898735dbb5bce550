"""The three phases of ``memdir dream`` and :func:`run_dream`, which runs them
(docs/design.md#dreaming).

- **Light**: ingest the daily notes of the last 2 days (today and yesterday) as candidate blocks
  (list items, paragraphs), dropping near-duplicates (Jaccard ≥ 0.9 over
  :func:`memdir.text.similarity_tokens`; the newer note wins). They give each recall entry its
  *daily signal*: the best share of one block's tokens found in the entry (counted from 0.5 up),
  i.e. the entry is in, or was written again in, the current notes.
- **REM**: themes that keep surfacing: a concept tag carried by at least 2 entries recalled in
  the last 30 days, with ``strength = 0.5·min(1, entries / 3) + 0.5·min(1, days / 3)`` (days =
  distinct recall days of those entries); a theme needs strength ≥ 0.75.
- **Deep**: score every entry (:mod:`memdir.dreaming.scoring`), apply the gates, and promote the
  passing ones, best first (:mod:`memdir.dreaming.promotion`), keeping MEMORY.md within its
  budget (:mod:`memdir.dreaming.budget`). A block that reads like a prompt injection is never
  promoted; each one is a warning of the run (:func:`refusals`).

A preview runs all of it, re-reading the live notes and MEMORY.md, and writes nothing.
"""

from __future__ import annotations

import contextlib
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from memdir.audit import Operation, audited, check_writable
from memdir.dreaming.budget import MEMORY_BUDGET_CHARS
from memdir.dreaming.promotion import (
    DEDUPE_JACCARD,
    DONE_STATUSES,
    NoteBlock,
    Outcome,
    PromotionResult,
    append_diary,
    diary_entry,
    note_blocks,
    promote,
    read_note,
)
from memdir.dreaming.scoring import (
    MANUAL_GATES,
    SCHEDULE_GATES,
    Factors,
    GateCheck,
    Gates,
    gate_checks,
    score_entry,
)
from memdir.dreaming.store import RecallEntry, RecallStore
from memdir.errors import MemdirError, PathNotAllowed
from memdir.markdown.generated import generated_indexes
from memdir.safety.untrusted import preview
from memdir.text import jaccard, similarity_tokens, stem
from memdir.workspace.layout import DREAMS_FILE, MEMORY_FILE, Workspace

LIGHT_DAYS = 2
LIGHT_MIN_CONTAINMENT = 0.5
REM_WINDOW_DAYS = 30
REM_MIN_ENTRIES = 2
REM_MIN_STRENGTH = 0.75
REM_SATURATION = 3
#: Entries not recalled for this long are forgotten by an applied run.
RECALL_RETENTION_DAYS = 180


# -- light ----------------------------------------------------------------------------------


@dataclass
class LightReport:
    notes: list[str]
    blocks: int
    candidates: list[NoteBlock]


def dedupe_blocks(
    blocks: Sequence[NoteBlock], threshold: float = DEDUPE_JACCARD
) -> list[NoteBlock]:
    """Keep the first of every group of blocks with Jaccard ≥ ``threshold``."""
    kept: list[tuple[NoteBlock, frozenset[str]]] = []
    for block in blocks:
        tokens = similarity_tokens(block.text)
        if any(jaccard(tokens, other) >= threshold for _, other in kept):
            continue
        kept.append((block, tokens))
    return [block for block, _ in kept]


def light_phase(workspace: Workspace, now: datetime, days: int = LIGHT_DAYS) -> LightReport:
    """The blocks of the last ``days`` daily notes, newest note first, deduplicated."""
    notes: list[str] = []
    blocks: list[NoteBlock] = []
    for back in range(days):
        rel = f"memory/{(now.date() - timedelta(days=back)).isoformat()}.md"
        try:
            lines = read_note(workspace.resolve_memory_path(rel))
        except PathNotAllowed:  # a symlinked note is not read (docs/design.md#path-safety)
            lines = None
        if lines is None:
            continue
        notes.append(rel)
        blocks.extend(note_blocks(rel, lines, 1, len(lines), skip=generated_indexes(lines)))
    return LightReport(notes, len(blocks), dedupe_blocks(blocks))


def daily_signal(snippet: str, blocks: Sequence[NoteBlock]) -> float:
    """The best share of one block's tokens found in ``snippet`` (0 below 0.5)."""
    return _containment(similarity_tokens(snippet), [similarity_tokens(b.text) for b in blocks])


def _containment(tokens: frozenset[str], blocks: Sequence[frozenset[str]]) -> float:
    best = max((len(wanted & tokens) / len(wanted) for wanted in blocks if wanted), default=0.0)
    return best if best >= LIGHT_MIN_CONTAINMENT else 0.0


# -- REM ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Theme:
    """A concept that keeps surfacing; ``variants`` are its spellings (one stem)."""

    tag: str
    entries: int
    days: int
    strength: float
    variants: tuple[str, ...] = ()


def theme_strength(entries: int, days: int) -> float:
    return 0.5 * min(1.0, entries / REM_SATURATION) + 0.5 * min(1.0, days / REM_SATURATION)


def rem_phase(entries: Sequence[RecallEntry], now: datetime) -> list[Theme]:
    """Concept tags that keep surfacing across entries and days (strongest first); tags with
    one stem (``migration``, ``migrations``) are one theme."""
    since = now - timedelta(days=REM_WINDOW_DAYS)
    by_stem: dict[str, list[RecallEntry]] = defaultdict(list)
    spellings: dict[str, Counter[str]] = defaultdict(Counter)
    for entry in entries:
        if entry.last_recalled < since:
            continue
        for key in dict.fromkeys(stem(tag) for tag in entry.tags):
            by_stem[key].append(entry)
        for tag in entry.tags:
            spellings[stem(tag)][tag] += 1
    themes = []
    for key, group in by_stem.items():
        if len(group) < REM_MIN_ENTRIES:
            continue
        days = len({day for entry in group for day in entry.days})
        strength = theme_strength(len(group), days)
        if strength >= REM_MIN_STRENGTH:
            ranked = sorted(spellings[key].items(), key=lambda kv: (-kv[1], kv[0]))
            variants = tuple(tag for tag, _ in ranked)
            themes.append(Theme(variants[0], len(group), days, strength, variants))
    return sorted(themes, key=lambda t: (-t.strength, -t.entries, t.tag))


def theme_strengths(themes: Sequence[Theme]) -> dict[str, float]:
    """Every spelling of every theme → its strength (what scoring looks tags up in)."""
    return {tag: t.strength for t in themes for tag in (t.variants or (t.tag,))}


# -- deep -----------------------------------------------------------------------------------


@dataclass
class PromotionCandidate:
    """A recall entry with its score, each gate it passes or fails, its gate failures and,
    once selected, its outcome."""

    entry: RecallEntry
    factors: Factors
    failures: list[str] = field(default_factory=list)
    checks: list[GateCheck] = field(default_factory=list)
    selected: bool = False
    outcome: Outcome | None = None

    @property
    def key(self) -> str:
        return self.entry.key

    @property
    def score(self) -> float:
        return self.factors.score

    @property
    def status(self) -> str:
        if self.entry.promoted_at is not None:
            return "promoted earlier"
        if self.outcome is not None:
            return self.outcome.status
        return "selected" if self.selected else "below gates"

    def to_dict(self) -> dict[str, Any]:
        e = self.entry
        return {
            "key": e.key,
            "path": e.path,
            "start_line": e.start_line,
            "end_line": e.end_line,
            "snippet": e.snippet,
            "recalls": e.recall_count,
            "unique_queries": e.unique_queries,
            "days": list(e.days),
            "tags": list(e.tags),
            "max_score": round(e.max_score, 6),
            "first_recalled": e.first_recalled.isoformat(),
            "last_recalled": e.last_recalled.isoformat(),
            "promoted_at": e.promoted_at.isoformat() if e.promoted_at else None,
            "score": round(self.score, 6),
            "factors": self.factors.to_dict(),
            "failures": self.failures,
            "gates": [check.to_dict() for check in self.checks],
            "status": self.status,
            "outcome": self.outcome.to_dict() if self.outcome else None,
        }


def deep_phase(
    entries: Sequence[RecallEntry],
    *,
    now: datetime,
    themes: Mapping[str, float],
    light: Sequence[NoteBlock],
    gates: Gates,
) -> list[PromotionCandidate]:
    """Score every entry, mark the ones to promote (best first, within the per-run limit)."""
    light_tokens = [similarity_tokens(block.text) for block in light]
    candidates = []
    for entry in entries:
        signal = _containment(similarity_tokens(entry.snippet), light_tokens)
        factors = score_entry(entry, now=now, themes=themes, light_signal=signal)
        candidate = PromotionCandidate(entry, factors)
        if entry.promoted_at is None:
            note = entry.note_date
            candidate.checks = gate_checks(
                factors.score,
                recalls=entry.recall_count,
                unique_queries=entry.unique_queries,
                note_age_days=(now.date() - note).days if note else None,
                gates=gates,
            )
            candidate.failures = [c.failure() for c in candidate.checks if not c.passed]
        candidates.append(candidate)
    candidates.sort(key=lambda c: (-c.score, c.key))
    passing = [c for c in candidates if c.entry.promoted_at is None and not c.failures]
    for rank, candidate in enumerate(passing):
        if gates.max_per_run is not None and rank >= gates.max_per_run:
            candidate.failures.append(f"over the limit of {gates.max_per_run} per run")
        else:
            candidate.selected = True
    return candidates


# -- the run --------------------------------------------------------------------------------


@dataclass
class DreamReport:
    """Everything one ``memdir dream`` run saw and did."""

    now: datetime
    applied: bool
    gates: Gates
    light: LightReport
    themes: list[Theme]
    candidates: list[PromotionCandidate]
    promotion: PromotionResult
    budget: int
    diary: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def promoted(self) -> list[Outcome]:
        return [o for o in self.promotion.outcomes if o.status == "promoted"]

    def find(self, key: str) -> PromotionCandidate:
        """The candidate whose key is or starts with ``key``.

        Raises:
            MemdirError: no entry has this key, or several start with it.
        """
        wanted = key.strip().lower()
        matches = [c for c in self.candidates if c.key.startswith(wanted)] if wanted else []
        exact = [c for c in matches if c.key == wanted]
        if exact or len(matches) == 1:
            return (exact or matches)[0]
        if not matches:
            raise MemdirError(f"no recall entry with key {key!r}: run `memdir dream` to list them")
        raise MemdirError(f"key {key!r} is ambiguous ({len(matches)} entries): give more of it")

    def summary(self) -> str:
        verb = "promoted" if self.applied else "would promote"
        lines = sum(len(o.lines) for o in self.promoted)
        text = (
            f"dream {self.now.date().isoformat()} ({self.gates.name} gates): {verb} "
            f"{_count(len(self.promoted), 'entry', 'entries')} ({_count(lines, 'line')}), "
            f"{'evicted' if self.applied else 'would evict'} {len(self.promotion.evicted)}; "
            f"MEMORY.md {self.promotion.chars_after:,}/{self.budget:,} chars"
        )
        if self.promotion.over_budget:
            text += (
                f"; over budget: person-written text alone is {self.promotion.person_chars:,} "
                "chars and is never removed"
            )
        return text

    def to_dict(self) -> dict[str, Any]:
        p = self.promotion
        return {
            "now": self.now.isoformat(),
            "applied": self.applied,
            "gates": self.gates.name,
            "light": {
                "notes": self.light.notes,
                "blocks": self.light.blocks,
                "candidates": len(self.light.candidates),
            },
            "themes": [t.__dict__ for t in self.themes],
            "candidates": [c.to_dict() for c in self.candidates],
            "outcomes": [o.to_dict() for o in p.outcomes],
            "evicted": p.evicted,
            "memory_chars": {"before": p.chars_before, "after": p.chars_after},
            "budget": self.budget,
            "over_budget": p.over_budget,
            "person_chars": p.person_chars,
            "written": p.written,
            "diary": self.diary,
            "summary": self.summary(),
            "warnings": self.warnings,
        }


def run_dream(
    workspace: Workspace,
    store: RecallStore,
    *,
    now: datetime,
    apply: bool,
    schedule: bool = False,
    diary: bool = False,
    snippet_chars: int = 700,
    budget: int = MEMORY_BUDGET_CHARS,
) -> DreamReport:
    """Run light, REM and deep; with ``apply``, write MEMORY.md, mark the promoted entries,
    forget entries not recalled for :data:`RECALL_RETENTION_DAYS`, and (``diary``) append a
    summary to DREAMS.md."""
    gates = SCHEDULE_GATES if schedule else MANUAL_GATES
    entries = store.entries()
    light = light_phase(workspace, now)
    themes = rem_phase(entries, now)
    candidates = deep_phase(
        entries,
        now=now,
        themes=theme_strengths(themes),
        light=light.candidates,
        gates=gates,
    )
    selected = [c for c in candidates if c.selected]
    if apply:  # both files or neither: a read-only one is refused before MEMORY.md changes
        check_writable(workspace, MEMORY_FILE, *((DREAMS_FILE,) if diary else ()))
    writing: contextlib.AbstractContextManager[Operation | None] = (
        audited(workspace, "dream") if apply else contextlib.nullcontext()
    )
    with writing as op:
        result = promote(
            workspace,
            [c.entry for c in selected],
            day=now.date().isoformat(),
            apply=apply,
            snippet_chars=snippet_chars,
            budget=budget,
            forgotten=store.forgotten_keys(),
        )
        for candidate, outcome in zip(selected, result.outcomes, strict=True):
            candidate.outcome = outcome
        report = DreamReport(now, apply, gates, light, themes, candidates, result, budget)
        report.warnings.extend(store.notes)
        report.warnings.extend(refusals(result.outcomes, applied=apply))
        if op is not None:
            done = [o.key for o in result.outcomes if o.status in DONE_STATUSES]
            store.mark_promoted(done, when=now)
            store.prune(before=now - timedelta(days=RECALL_RETENTION_DAYS))
            if diary and (report.promoted or result.evicted):
                entry = diary_entry(now, result, budget)
                report.diary = str(append_diary(workspace, entry))
            op.describe(_dream_summary(report))
    if op is not None:
        report.warnings.extend(op.warnings)
    return report


def refusals(outcomes: Sequence[Outcome], *, applied: bool) -> list[str]:
    """One warning per block that is not promoted because it reads like a prompt injection
    (a person may still copy it into MEMORY.md by hand)."""
    verb = "not promoted" if applied else "would not promote"
    return [
        f"{verb}, reads like a prompt injection: {preview(outcome.path, 200)}"
        f"#L{block.start_line}-L{block.end_line}: {preview(block.text)}"
        for outcome in outcomes
        for block in outcome.refused
    ]


def _dream_summary(report: DreamReport) -> str:
    """``promoted 2 entries (3 lines), evicted 1 line, diary``."""
    lines = sum(len(o.lines) for o in report.promoted)
    parts = [
        f"promoted {_count(len(report.promoted), 'entry', 'entries')} ({_count(lines, 'line')})"
    ]
    if report.promotion.evicted:
        parts.append(f"evicted {_count(len(report.promotion.evicted), 'line')}")
    if report.diary:
        parts.append("diary")
    return ", ".join(parts)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


__all__ = [
    "LIGHT_DAYS",
    "RECALL_RETENTION_DAYS",
    "REM_MIN_STRENGTH",
    "DreamReport",
    "LightReport",
    "PromotionCandidate",
    "Theme",
    "daily_signal",
    "dedupe_blocks",
    "deep_phase",
    "light_phase",
    "refusals",
    "rem_phase",
    "run_dream",
    "theme_strength",
    "theme_strengths",
]
