"""Builders for dreaming tests: recall entries by hand, or recorded through the real store."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from memdir.dreaming.store import (
    RecallEntry,
    RecallHit,
    RecallStore,
    entry_key,
    query_hash,
    snippet_sha,
)


def make_entry(
    *,
    path: str = "memory/2026-11-28.md",
    start_line: int = 3,
    end_line: int = 3,
    snippet: str = "- a fact",
    recalls: int = 3,
    total_score: float = 1.5,
    queries: int = 2,
    days: Sequence[str] = ("2026-11-29", "2026-11-30"),
    tags: Sequence[str] = (),
    first: str = "2026-11-29T09:00",
    last: str = "2026-11-30T09:00",
    promoted_at: str | None = None,
) -> RecallEntry:
    """A recall entry with the given history (nothing is stored)."""
    sha = snippet_sha(snippet)
    return RecallEntry(
        key=entry_key(path, start_line, end_line, sha),
        path=path,
        start_line=start_line,
        end_line=end_line,
        snippet_hash=sha,
        snippet=snippet,
        recall_count=recalls,
        total_score=total_score,
        max_score=total_score / max(recalls, 1),
        query_hashes=tuple(query_hash(f"query {i}") for i in range(queries)),
        days=tuple(days),
        tags=tuple(tags),
        first_recalled=datetime.fromisoformat(first),
        last_recalled=datetime.fromisoformat(last),
        promoted_at=datetime.fromisoformat(promoted_at) if promoted_at else None,
    )


def seed_recalls(
    store: RecallStore,
    path: str,
    start_line: int,
    end_line: int,
    snippet: str,
    *,
    until: datetime,
    days: int = 5,
    queries: Sequence[str] = ("first query", "second query", "third query"),
    score: float = 0.9,
    tags: Sequence[str] = (),
) -> str:
    """Record ``snippet`` once per query on each of ``days`` days ending at ``until``, through
    :meth:`RecallStore.record`; return the entry key."""
    hit = RecallHit(path, start_line, end_line, snippet, score, tuple(tags))
    for back in reversed(range(days)):
        for query in queries:
            store.record([hit], query=query, now=until - timedelta(days=back))
    return entry_key(path, start_line, end_line, snippet_sha(snippet))
