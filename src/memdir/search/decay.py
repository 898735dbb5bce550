"""Temporal decay (docs/design.md#search, step 5; ``search.decay``, off by default): daily logs
lose weight with their age, extra paths with their file's age; everything else is evergreen.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date, datetime

from memdir.search.types import Candidate
from memdir.workspace.layout import is_daily_log


def file_date(path: str) -> date | None:
    """The date of a daily log ``memory/YYYY-MM-DD.md``; None for evergreen files."""
    day = is_daily_log(path)
    return date.fromisoformat(day) if day else None


def decay_factor(age_days: float, half_life_days: float) -> float:
    """``exp(-ln2 · age / half_life)``; no decay for a non-positive half-life or age."""
    if half_life_days <= 0 or age_days <= 0:
        return 1.0
    return math.exp(-math.log(2) * age_days / half_life_days)


def apply_temporal_decay(
    candidates: Sequence[Candidate],
    *,
    now: datetime,
    half_life_days: float,
    extra_mtimes: dict[str, float] | None = None,
    floor: float = 0.0,
) -> None:
    """Scale daily-log scores (and extra paths', by mtime) by their age; others are evergreen."""
    today = now.date()
    for cand in candidates:
        day = file_date(cand.chunk.path)
        age: float | None = None
        if day is not None:
            age = float((today - day).days)
        elif cand.chunk.source == "extra" and extra_mtimes and cand.chunk.path in extra_mtimes:
            age = (now.timestamp() - extra_mtimes[cand.chunk.path]) / 86400.0
        if age is None:
            continue
        cand.age_days = age
        cand.decay = floor + (1.0 - floor) * decay_factor(age, half_life_days)
        cand.score *= cand.decay


__all__ = ["apply_temporal_decay", "decay_factor", "file_date"]
