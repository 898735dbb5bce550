"""The recall store: what searches brought back from the daily logs (docs/design.md#dreaming).

``<workspace>/.memdir/recall.sqlite`` (next to the index, in the same fallback folder when the
workspace is read-only) is machine state, not truth: deleting it forgets the recall history and
nothing else. It is a separate file from the index because the index file is swapped on rebuilds.

One row per *recall entry*, keyed by ``(path, start_line, end_line, sha256(snippet))`` of a
search result from a daily log ``memory/YYYY-MM-DD.md``, with:

- ``recall_count``, ``total_score``, ``max_score``: how often and how well it was returned;
- ``query_hashes``: the last 32 distinct queries (sha256 of the case-folded, space-normalised
  query, 16 hex), most recent first;
- ``days``: the last 16 distinct days it was recalled on, most recent first;
- ``tags``: up to 8 concept tags, most recent first: the query terms (:func:`memdir.text.
  query_terms`: stopwords dropped, Chinese segmented, English stemmed) that the snippet
  mentions, so a tag is something the snippet is about; kept as the query spelled them;
- ``first_recalled``, ``last_recalled``, ``promoted_at`` (ISO local times, as :func:`memdir.
  clock.now`).

Recording runs at the end of every :meth:`memdir.Memory.search`: one ``BEGIN IMMEDIATE``
transaction per search, one ``SELECT`` of the rows it touches and one ``executemany`` upsert.
:func:`record_recalls` never raises into a search: a failure becomes a warning on the response.
The schema is a tuple of numbered, append-only migrations (``PRAGMA user_version``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from memdir.errors import IndexStoreError
from memdir.search.types import SearchResponse
from memdir.sqlitedb import apply_migrations, open_wal
from memdir.text import has_cjk, stem
from memdir.workspace.layout import is_daily_log

log = logging.getLogger(__name__)

RECALL_NAME = "recall.sqlite"
MAX_QUERY_HASHES = 32
MAX_DAYS = 16
MAX_TAGS = 8
#: Recording is best effort: rather a warning than a search stuck behind a long writer.
BUSY_TIMEOUT_S = 2.0
_LATIN_WORD_RE = re.compile(r"[a-z]+")
_ASCII_WORD_RE = re.compile(r"[a-z0-9]+(?:[._'][a-z0-9]+)*")

MIGRATIONS: tuple[str, ...] = (
    # 1: the initial schema
    """
    CREATE TABLE recalls (
        key            TEXT PRIMARY KEY,
        path           TEXT NOT NULL,
        start_line     INTEGER NOT NULL,
        end_line       INTEGER NOT NULL,
        snippet_hash   TEXT NOT NULL,
        snippet        TEXT NOT NULL,
        recall_count   INTEGER NOT NULL,
        total_score    REAL NOT NULL,
        max_score      REAL NOT NULL,
        query_hashes   TEXT NOT NULL,
        days           TEXT NOT NULL,
        tags           TEXT NOT NULL,
        first_recalled TEXT NOT NULL,
        last_recalled  TEXT NOT NULL,
        promoted_at    TEXT,
        UNIQUE (path, start_line, end_line, snippet_hash)
    )
    """,
    # 2: lines removed by `memdir forget`, never to be promoted again
    """
    CREATE TABLE forgotten (
        forget_key   TEXT PRIMARY KEY,
        path         TEXT NOT NULL,
        text         TEXT NOT NULL,
        forgotten_at TEXT NOT NULL
    )
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)

_COLUMNS = (
    "key, path, start_line, end_line, snippet_hash, snippet, recall_count, total_score, "
    "max_score, query_hashes, days, tags, first_recalled, last_recalled, promoted_at"
)


@dataclass(frozen=True)
class RecallEntry:
    """One recalled snippet of a daily log and its history."""

    key: str
    path: str
    start_line: int
    end_line: int
    snippet_hash: str
    snippet: str
    recall_count: int
    total_score: float
    max_score: float
    query_hashes: tuple[str, ...]
    days: tuple[str, ...]
    tags: tuple[str, ...]
    first_recalled: datetime
    last_recalled: datetime
    promoted_at: datetime | None = None

    @property
    def unique_queries(self) -> int:
        return len(self.query_hashes)

    @property
    def note_date(self) -> date | None:
        """The date of the daily log the snippet comes from."""
        day = is_daily_log(self.path)
        return date.fromisoformat(day) if day else None

    @property
    def citation(self) -> str:
        return f"{self.path}#L{self.start_line}-L{self.end_line}"


@dataclass(frozen=True)
class RecallHit:
    """One search result to record."""

    path: str
    start_line: int
    end_line: int
    snippet: str
    score: float
    tags: tuple[str, ...]


def entry_key(path: str, start_line: int, end_line: int, snippet_hash: str) -> str:
    """The short id of a recall entry (12 hex), as shown by ``memdir dream``."""
    raw = f"{path}\n{start_line}\n{end_line}\n{snippet_hash}".encode()
    return hashlib.sha256(raw).hexdigest()[:12]


def snippet_sha(snippet: str) -> str:
    return hashlib.sha256(snippet.encode("utf-8")).hexdigest()


def query_hash(query: str) -> str:
    """sha256 (16 hex) of the query, case-folded with runs of whitespace made one space."""
    normal = " ".join(query.casefold().split())
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()[:16]


def mentioned_terms(text: str, terms: Sequence[str]) -> list[str]:
    """The search terms (:func:`memdir.text.query_terms`) that ``text`` mentions: a Chinese term
    as a substring, any other as a word (stemmed like the index). Cheap: no segmentation."""
    lowered = text.lower()
    words: set[str] = set()
    for word in _ASCII_WORD_RE.findall(lowered):
        words.add(stem(word))
        words.update(stem(part) for part in re.split(r"[._']", word) if part)
    return [t for t in terms if (t in lowered if has_cjk(t) or not t.isascii() else t in words)]


def concept_tags(snippet: str, query: str, terms: Sequence[str]) -> tuple[str, ...]:
    """The query terms the snippet is about (:func:`mentioned_terms`), as the query wrote them
    (``migrations``, not the stem ``migrat``); single Latin letters and bare numbers are not
    concepts."""
    if not terms:
        return ()
    surface: dict[str, str] = {}
    for word in _LATIN_WORD_RE.findall(query.lower()):
        surface.setdefault(stem(word), word)
    wanted = [t for t in terms if not t.isdigit() and not (len(t) == 1 and t.isascii())]
    return tuple(surface.get(t, t) for t in mentioned_terms(snippet, wanted))


class RecallStore:
    """The recall database of one workspace; opened on first use, safe across processes.

    Args:
        path: the SQLite file, normally ``<workspace>/.memdir/recall.sqlite``.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.notes: list[str] = []
        self._conn: sqlite3.Connection | None = None

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None

    # -- opening ----------------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            try:
                self._conn = _connect(self.path)
            except sqlite3.OperationalError:
                raise  # busy, locked, read-only: transient or not ours to fix
            except sqlite3.DatabaseError as exc:
                self._conn = self._replace_unreadable(exc)
        return self._conn

    def _replace_unreadable(self, exc: sqlite3.DatabaseError) -> sqlite3.Connection:
        """Move a file that is not a database aside and start an empty store."""
        aside = self.path.with_name(f"{RECALL_NAME}.corrupt-{int(time.time())}")
        with contextlib.suppress(FileNotFoundError):
            os.replace(self.path, aside)
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{self.path}{suffix}")
        self.notes.append(f"recall store was unreadable ({exc}); moved to {aside.name}")
        return _connect(self.path)

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    # -- writing ----------------------------------------------------------------------------

    def record(self, hits: Sequence[RecallHit], *, query: str, now: datetime) -> int:
        """Add one search's daily-log hits: one transaction, one select, one executemany.

        Returns:
            The number of entries touched.
        """
        if not hits:
            return 0
        qhash = query_hash(query)
        day = now.date().isoformat()
        stamp = now.isoformat()
        keyed = {
            entry_key(h.path, h.start_line, h.end_line, snippet_sha(h.snippet)): h for h in hits
        }
        rows = []
        with self._write() as conn:
            marks = ",".join("?" * len(keyed))
            existing = {
                row[0]: row
                for row in conn.execute(
                    "SELECT key, recall_count, total_score, max_score, query_hashes, days, tags,"
                    f" first_recalled FROM recalls WHERE key IN ({marks})",
                    list(keyed),
                )
            }
            for key, hit in keyed.items():
                old = existing.get(key)
                score = max(0.0, float(hit.score))
                if old is None:
                    count, total, best = 1, score, score
                    queries, days, tags = [qhash], [day], list(hit.tags[:MAX_TAGS])
                    first = stamp
                else:
                    count, total, best = old[1] + 1, old[2] + score, max(old[3], score)
                    queries = _most_recent([qhash], json.loads(old[4]), MAX_QUERY_HASHES)
                    days = _most_recent([day], json.loads(old[5]), MAX_DAYS)
                    tags = _most_recent(hit.tags, json.loads(old[6]), MAX_TAGS)
                    first = old[7]
                sha, lists = snippet_sha(hit.snippet), (queries, days)
                row = (key, hit.path, hit.start_line, hit.end_line, sha, hit.snippet, count)
                rows.append((*row, total, best, *map(json.dumps, lists), _json(tags), first, stamp))
            conn.executemany(
                f"INSERT INTO recalls ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,NULL) "
                "ON CONFLICT(key) DO UPDATE SET recall_count = excluded.recall_count, "
                "total_score = excluded.total_score, max_score = excluded.max_score, "
                "query_hashes = excluded.query_hashes, days = excluded.days, "
                "tags = excluded.tags, last_recalled = excluded.last_recalled",
                rows,
            )
        return len(rows)

    def mark_promoted(self, keys: Iterable[str], *, when: datetime) -> None:
        """Set ``promoted_at`` on entries that are not promoted yet."""
        params = [(when.isoformat(), key) for key in keys]
        if not params:
            return
        with self._write() as conn:
            conn.executemany(
                "UPDATE recalls SET promoted_at = ? WHERE key = ? AND promoted_at IS NULL", params
            )

    def forget(self, lines: Sequence[tuple[str, str, str]], *, now: datetime) -> int:
        """Forget removed lines for good: remember their keys (dreaming skips them) and drop
        the recall entries whose snippet holds one of them (in any daily log: a promoted line
        forgotten from MEMORY.md takes its source's entries too).

        Args:
            lines: (path, the line's words (:func:`memdir.dreaming.promotion.plain_text`),
                :func:`memdir.dreaming.promotion.forget_key`) of each line.

        Returns:
            How many recall entries were dropped.
        """
        if not lines:
            return 0
        stamp = now.isoformat()
        with self._write() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO forgotten (forget_key, path, text, forgotten_at) "
                "VALUES (?, ?, ?, ?)",
                [(key, path, text, stamp) for path, text, key in lines],
            )
            dropped = 0
            for _, text, _ in lines:
                needle = text.strip()
                if not needle:
                    continue
                cursor = conn.execute("DELETE FROM recalls WHERE instr(snippet, ?) > 0", (needle,))
                dropped += cursor.rowcount
        return dropped

    def forgotten_keys(self) -> frozenset[str]:
        """The keys of every forgotten line."""
        rows = self._connection().execute("SELECT forget_key FROM forgotten")
        return frozenset(str(row[0]) for row in rows)

    def prune(self, *, before: datetime) -> int:
        """Forget entries last recalled before ``before``; returns how many went."""
        with self._write() as conn:
            cursor = conn.execute(
                "DELETE FROM recalls WHERE last_recalled < ?", (before.isoformat(),)
            )
            return cursor.rowcount

    # -- reading ----------------------------------------------------------------------------

    def entries(self) -> list[RecallEntry]:
        """Every entry, most recently recalled first."""
        rows = self._connection().execute(
            f"SELECT {_COLUMNS} FROM recalls ORDER BY last_recalled DESC, key"
        )
        return [_entry(row) for row in rows]

    def get(self, key: str) -> RecallEntry | None:
        row = (
            self._connection()
            .execute(f"SELECT {_COLUMNS} FROM recalls WHERE key = ?", (key,))
            .fetchone()
        )
        return None if row is None else _entry(row)


def record_recalls(store: RecallStore, response: SearchResponse, *, now: datetime) -> None:
    """Record the daily-log results of ``response``; never raises into the search.

    A failure (a locked or read-only store, a full disk) adds one warning to the response.
    """
    try:
        hits = [
            RecallHit(
                r.path,
                r.start_line,
                r.end_line,
                r.snippet,
                _recall_score(r, response.calibrated),
                concept_tags(r.snippet, response.query, response.terms),
            )
            for r in response.results
            if is_daily_log(r.path)
        ]
        if hits:
            store.record(hits, query=response.query, now=now)
    except Exception as exc:
        log.warning("recall tracking failed: %s", exc)
        response.warnings.append(f"recall tracking failed (search is unaffected): {exc}")
    else:
        response.warnings.extend(store.notes)
        store.notes.clear()


def _recall_score(result: Any, calibrated: bool) -> float:
    """The score dreaming's relevance averages: the search's hybrid (fused) score, the scale
    OpenClaw's gates were set on. A calibrated relevance is an honest probability, often 0.2
    for a real answer (docs/design.md#search, step 7): averaged, it would keep nearly every
    note below the 0.75 gate."""
    if not calibrated:
        return float(result.score)
    return float(result.explain.get("fused", result.score))


def _json(items: Sequence[str]) -> str:
    return json.dumps(list(items), ensure_ascii=False)


def _most_recent(new: Iterable[str], old: Iterable[str], limit: int) -> list[str]:
    out: dict[str, None] = {}
    for item in (*new, *old):
        out.setdefault(item, None)
    return list(out)[:limit]


def _entry(row: tuple[Any, ...]) -> RecallEntry:
    promoted = row[14]
    return RecallEntry(
        key=str(row[0]),
        path=str(row[1]),
        start_line=int(row[2]),
        end_line=int(row[3]),
        snippet_hash=str(row[4]),
        snippet=str(row[5]),
        recall_count=int(row[6]),
        total_score=float(row[7]),
        max_score=float(row[8]),
        query_hashes=tuple(json.loads(row[9])),
        days=tuple(json.loads(row[10])),
        tags=tuple(json.loads(row[11])),
        first_recalled=datetime.fromisoformat(str(row[12])),
        last_recalled=datetime.fromisoformat(str(row[13])),
        promoted_at=datetime.fromisoformat(str(promoted)) if promoted else None,
    )


def _connect(path: Path) -> sqlite3.Connection:
    return open_wal(path, timeout=BUSY_TIMEOUT_S, migrate=_migrate)


def _migrate(conn: sqlite3.Connection) -> None:
    """Apply the missing migrations, each in its own transaction."""
    apply_migrations(
        conn,
        MIGRATIONS,
        newer=lambda found, known: IndexStoreError(
            f"the recall store is from a newer memdir (schema {found} > {known}): upgrade memdir"
        ),
    )


__all__ = [
    "MAX_DAYS",
    "MAX_QUERY_HASHES",
    "MAX_TAGS",
    "RECALL_NAME",
    "SCHEMA_VERSION",
    "RecallEntry",
    "RecallHit",
    "RecallStore",
    "concept_tags",
    "entry_key",
    "mentioned_terms",
    "query_hash",
    "record_recalls",
    "snippet_sha",
]
