"""The deep-phase score of a recall entry and the gates it must pass to be promoted
(docs/design.md#dreaming).

::

    score = 0.24·frequency + 0.30·relevance + 0.15·diversity + 0.15·recency
          + 0.10·consolidation + 0.06·conceptual + light boost + REM boost

Every factor is in [0, 1], so the weighted sum is in [0, 1] and the score in [0, 1.15]:

- **frequency** = ``min(1, ln(1 + n) / ln 11)``, n = recall count (10 recalls saturate it).
- **relevance** = mean recall score = total score / n (search scores, so already decayed by the
  note's age).
- **diversity** = ``min(1, max(unique queries, distinct days) / 5)``.
- **recency** = ``exp(−ln 2 · d / 14)``, d = days (fractional) since the last recall.
- **consolidation** = ``min(1, (last recall day − first recall day) / 7)``: how long the entry
  has kept coming back. 0 for an entry recalled on one day only (a burst), 1 once its recalls
  span a week or more (spaced recall, the kind that consolidates a memory).
- **conceptual** = share of the entry's concept tags that are REM themes (0 without tags):
  how much of what the entry is about belongs to a recurring theme.
- **light boost** = ``0.06 · daily signal``; the daily signal (light phase) is how much of one
  block of the last 2 days' daily notes the entry contains (token containment, counted from
  0.5 up): the entry is in, or was written again in, the current notes.
- **REM boost** = ``0.09 · strength`` of the strongest REM theme among the entry's tags.

Gates (all must hold; the score is compared rounded to 9 decimals, so 0.75 passes 0.75):
manual runs score ≥ 0.75, recalls ≥ 3, unique queries ≥ 2; scheduled runs score ≥ 0.8,
recalls ≥ 3, unique queries ≥ 3, daily note at most 30 days old, at most 10 promotions a run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from memdir.dreaming.store import RecallEntry

WEIGHTS: dict[str, float] = {
    "frequency": 0.24,
    "relevance": 0.30,
    "diversity": 0.15,
    "recency": 0.15,
    "consolidation": 0.10,
    "conceptual": 0.06,
}
LIGHT_BOOST_MAX = 0.06
REM_BOOST_MAX = 0.09
FREQUENCY_SATURATION = 10
DIVERSITY_TARGET = 5
RECENCY_HALF_LIFE_DAYS = 14.0
CONSOLIDATION_WINDOW_DAYS = 7


@dataclass(frozen=True)
class Gates:
    """What a candidate must reach to be promoted."""

    name: str
    min_score: float
    min_recalls: int
    min_unique_queries: int
    max_age_days: int | None = None
    max_per_run: int | None = None

    def describe(self) -> str:
        parts = [
            f"score ≥ {self.min_score:g}",
            f"recalls ≥ {self.min_recalls}",
            f"unique queries ≥ {self.min_unique_queries}",
        ]
        if self.max_age_days is not None:
            parts.append(f"note age ≤ {self.max_age_days} days")
        if self.max_per_run is not None:
            parts.append(f"≤ {self.max_per_run} per run")
        return ", ".join(parts)


MANUAL_GATES = Gates("manual", 0.75, 3, 2)
SCHEDULE_GATES = Gates("schedule", 0.8, 3, 3, max_age_days=30, max_per_run=10)


# -- factors ------------------------------------------------------------------------------


def frequency(recalls: int) -> float:
    """``min(1, ln(1 + n) / ln 11)``."""
    if recalls <= 0:
        return 0.0
    return min(1.0, math.log1p(recalls) / math.log1p(FREQUENCY_SATURATION))


def relevance(total_score: float, recalls: int) -> float:
    """The mean recall score, clamped to [0, 1]."""
    if recalls <= 0:
        return 0.0
    return _unit(total_score / recalls)


def diversity(unique_queries: int, days: int) -> float:
    """``min(1, max(unique queries, distinct days) / 5)``."""
    return min(1.0, max(unique_queries, days, 0) / DIVERSITY_TARGET)


def recency(days_since_last_recall: float) -> float:
    """``exp(−ln 2 · d / 14)``; 1 for a recall now (or, by clock skew, in the future)."""
    age = max(0.0, days_since_last_recall)
    return math.exp(-math.log(2) * age / RECENCY_HALF_LIFE_DAYS)


def consolidation(first_day: date, last_day: date) -> float:
    """``min(1, (last − first) days / 7)``."""
    return min(1.0, max(0, (last_day - first_day).days) / CONSOLIDATION_WINDOW_DAYS)


def conceptual(tags: tuple[str, ...], themes: Mapping[str, float]) -> float:
    """The share of ``tags`` that are REM themes."""
    if not tags:
        return 0.0
    return sum(1 for t in tags if t in themes) / len(tags)


def rem_signal(tags: tuple[str, ...], themes: Mapping[str, float]) -> float:
    """The strength of the strongest theme among ``tags`` (0 when none is a theme)."""
    return max((themes[t] for t in tags if t in themes), default=0.0)


@dataclass(frozen=True)
class Factors:
    """The six factors and the two phase signals of one entry, each in [0, 1]."""

    frequency: float
    relevance: float
    diversity: float
    recency: float
    consolidation: float
    conceptual: float
    light: float = 0.0  # daily signal from the light phase
    rem: float = 0.0  # strongest REM theme among the entry's tags

    @property
    def light_boost(self) -> float:
        return LIGHT_BOOST_MAX * _unit(self.light)

    @property
    def rem_boost(self) -> float:
        return REM_BOOST_MAX * _unit(self.rem)

    def contributions(self) -> dict[str, float]:
        """Each factor times its weight."""
        return {name: weight * _unit(getattr(self, name)) for name, weight in WEIGHTS.items()}

    @property
    def base(self) -> float:
        return sum(self.contributions().values())

    @property
    def score(self) -> float:
        return self.base + self.light_boost + self.rem_boost

    def to_dict(self) -> dict[str, Any]:
        contributions = self.contributions()
        out: dict[str, Any] = {
            name: {
                "value": round(getattr(self, name), 6),
                "weight": weight,
                "contribution": round(contributions[name], 6),
            }
            for name, weight in WEIGHTS.items()
        }
        out["light_boost"] = {
            "value": round(self.light, 6),
            "max": LIGHT_BOOST_MAX,
            "contribution": round(self.light_boost, 6),
        }
        out["rem_boost"] = {
            "value": round(self.rem, 6),
            "max": REM_BOOST_MAX,
            "contribution": round(self.rem_boost, 6),
        }
        out["score"] = round(self.score, 6)
        return out


def score_entry(
    entry: RecallEntry,
    *,
    now: datetime,
    themes: Mapping[str, float],
    light_signal: float = 0.0,
) -> Factors:
    """The factors of ``entry`` at ``now`` given the REM themes (tag → strength)."""
    return Factors(
        frequency=frequency(entry.recall_count),
        relevance=relevance(entry.total_score, entry.recall_count),
        diversity=diversity(entry.unique_queries, len(entry.days)),
        recency=recency((now - entry.last_recalled).total_seconds() / 86400.0),
        consolidation=consolidation(entry.first_recalled.date(), entry.last_recalled.date()),
        conceptual=conceptual(entry.tags, themes),
        light=_unit(light_signal),
        rem=rem_signal(entry.tags, themes),
    )


@dataclass(frozen=True)
class GateCheck:
    """One gate applied to one candidate: the limit it sets and what the candidate has."""

    name: str  # score | recalls | unique queries | note age
    op: str  # "≥" (at least) or "≤" (at most)
    limit: float
    actual: float
    passed: bool

    @property
    def required(self) -> str:
        unit = " days" if self.name == "note age" else ""
        return f"{self.op} {self.limit:g}{unit}"

    def failure(self) -> str:
        """Why it failed, in the words ``memdir dream`` prints."""
        if self.name == "score":
            return f"score {self.actual:.3f} < {self.limit:g}"
        if self.name == "note age":
            return f"note is {self.actual:g} days old > {self.limit:g}"
        return f"{self.name} {self.actual:g} < {self.limit:g}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "required": self.required,
            "actual": self.actual,
            "passed": self.passed,
        }


def gate_checks(
    score: float,
    *,
    recalls: int,
    unique_queries: int,
    note_age_days: int | None,
    gates: Gates,
) -> list[GateCheck]:
    """Every gate of ``gates`` applied to a candidate, passed or not (the per-run limit is
    applied by the caller, on the candidates that pass). The note-age gate is left out when the
    gates have none or the note has no date."""
    checks = [
        # Compared rounded to 9 decimals, so a score of exactly 0.75 passes 0.75.
        GateCheck("score", "≥", gates.min_score, score, round(score, 9) >= gates.min_score),
        GateCheck("recalls", "≥", gates.min_recalls, recalls, recalls >= gates.min_recalls),
        GateCheck(
            "unique queries",
            "≥",
            gates.min_unique_queries,
            unique_queries,
            unique_queries >= gates.min_unique_queries,
        ),
    ]
    if gates.max_age_days is not None and note_age_days is not None:
        checks.append(
            GateCheck(
                "note age",
                "≤",
                gates.max_age_days,
                note_age_days,
                note_age_days <= gates.max_age_days,
            )
        )
    return checks


def gate_failures(
    score: float,
    *,
    recalls: int,
    unique_queries: int,
    note_age_days: int | None,
    gates: Gates,
) -> list[str]:
    """Why a candidate does not pass ``gates`` (empty when it passes); see :func:`gate_checks`."""
    checks = gate_checks(
        score,
        recalls=recalls,
        unique_queries=unique_queries,
        note_age_days=note_age_days,
        gates=gates,
    )
    return [check.failure() for check in checks if not check.passed]


def _unit(value: float) -> float:
    if not math.isfinite(value):
        return 0.0
    return min(1.0, max(0.0, value))


__all__ = [
    "CONSOLIDATION_WINDOW_DAYS",
    "DIVERSITY_TARGET",
    "FREQUENCY_SATURATION",
    "LIGHT_BOOST_MAX",
    "MANUAL_GATES",
    "RECENCY_HALF_LIFE_DAYS",
    "REM_BOOST_MAX",
    "SCHEDULE_GATES",
    "WEIGHTS",
    "Factors",
    "GateCheck",
    "Gates",
    "conceptual",
    "consolidation",
    "diversity",
    "frequency",
    "gate_checks",
    "gate_failures",
    "recency",
    "relevance",
    "rem_signal",
    "score_entry",
]
