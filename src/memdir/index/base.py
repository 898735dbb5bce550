"""The storage interface of the index (docs/design.md#engines), shared by every engine.

Two protocols, one per responsibility:

- :class:`IndexBackend` — *the data*: files, chunks, keyword candidates and the statistics BM25
  needs, vectors, embedding cache, meta. :class:`memdir.index.sqlite.SqliteStore` and
  :class:`memdir.index.postgres.PostgresStore` implement it. Everything above (sync, bm25,
  search) talks only to this.
- :class:`IndexLifecycle` — *where the data lives and how it is kept*: opening, the writer lock,
  rebuilding on an identity change, recovering from failures, vector search. SQLite keeps its
  file lifecycle (temporary file + swap, corrupt-file recovery) in
  :class:`memdir.index.sqlite.SqliteLifecycle`; Postgres rebuilds a workspace's rows in one
  transaction and locks with an advisory lock. :class:`memdir.index.manager.IndexManager` picks
  one from a registry keyed by the URL scheme of ``[index] url``
  (:data:`memdir.index.manager.INDEX_ENGINES`).

An engine is a package ``memdir/index/<engine>/`` whose lifecycle class takes
:class:`LifecycleOptions`, plus one line in that registry.

Keyword queries reach storage as a :class:`KeywordQuery`: memdir's own tokens and how they
combine (any or all). Each engine turns it into its own query language and quotes every term
there (FTS5 in :mod:`memdir.index.sqlite.fts`, ``tsquery`` in :mod:`memdir.index.postgres.fts`),
so raw user text never reaches a query language. Scoring is memdir's BM25
(:mod:`memdir.index.bm25`), the same for every engine.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from memdir.embeddings.base import Vectors


@dataclass(frozen=True)
class FileRow:
    """What the index knows about one file."""

    path: str
    source: str
    hash: str
    mtime_ns: int
    size: int
    warning: str | None


@dataclass(frozen=True)
class NewChunk:
    """A chunk to insert, with its embedding when one is available."""

    id: str
    start_line: int
    end_line: int
    hash: str
    text: str
    tokens: str  # the segmented text the keyword index stores (memdir.text)
    embedding: Vectors | None
    embed: bool = True  # False: keyword search only (the file is too large to embed)
    #: The embedding-cache key of its vector (:func:`memdir.index.sync.vector_key`), under
    #: which ``embedding`` was found.
    vector_key: str = ""
    #: Where a chunk that begins or ends inside a long line does so (``markdown.Chunk``).
    start_col: int = 0
    end_col: int | None = None


@dataclass(frozen=True)
class EmbeddingSpace:
    """The embedding model an index's vectors come from (part of its identity)."""

    provider: str
    model: str
    provider_key: str
    dims: int


@dataclass(frozen=True)
class ChunkRow:
    """A stored chunk."""

    seq: int
    id: str
    path: str
    source: str
    start_line: int
    end_line: int
    text: str
    #: In an index shared by several hosts (PostgreSQL): the host whose copy of the file
    #: holds this chunk, when this host's copy does not (not synced here yet); else empty.
    copy: str = ""


@dataclass(frozen=True)
class FileCopy:
    """Another host's copy of a file as the shared index holds it (docs/design.md#memory_get):
    the lines its chunks cover, by 1-based number."""

    host: str
    lines: dict[int, str]
    total_lines: int


@dataclass(frozen=True)
class CorpusStats:
    """What BM25 needs to know about the whole index."""

    documents: int
    avg_length: float


#: How the terms of a :class:`KeywordQuery` combine: a chunk matches when it holds any of them
#: (``or``, memdir's default) or all of them (``and``, OpenClaw's query; for benchmarks).
KEYWORD_MODES = ("or", "and")


@dataclass(frozen=True)
class KeywordQuery:
    """A keyword query as it crosses the storage interface.

    Build it with :meth:`build`; the engines never see the user's text, only these terms.
    """

    #: Distinct, non-blank terms in query order, as the keyword tokenizer stored them.
    terms: tuple[str, ...]
    #: One of :data:`KEYWORD_MODES`.
    mode: str = "or"
    #: One weight per term (> 0), multiplying its IDF in BM25; empty: every term weighs 1.
    weights: tuple[float, ...] = ()
    #: One group number per term: terms of one group are forms of one word (a query term and
    #: its translations, :mod:`memdir.bridge`), of which BM25 counts the best a chunk holds,
    #: not their sum. Empty: every term is a group of its own.
    groups: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in KEYWORD_MODES:
            raise ValueError(f"keyword mode must be one of {', '.join(KEYWORD_MODES)}")
        if not self.terms:
            raise ValueError("a keyword query needs at least one term")
        if self.weights and len(self.weights) != len(self.terms):
            raise ValueError(f"{len(self.weights)} weights for {len(self.terms)} terms")
        if not all(math.isfinite(w) and w > 0 for w in self.weights):
            raise ValueError("a term weight must be a positive number")
        if self.groups and len(self.groups) != len(self.terms):
            raise ValueError(f"{len(self.groups)} groups for {len(self.terms)} terms")

    @classmethod
    def build(
        cls,
        terms: Iterable[str],
        mode: str = "or",
        weights: Mapping[str, float] | None = None,
        groups: Mapping[str, int] | None = None,
    ) -> KeywordQuery | None:
        """The query for ``terms`` (blank ones dropped, duplicates once), each weighted by
        ``weights`` (a term not in it weighs 1) and put in its group of ``groups`` (a term
        not in it is a group of its own); None when no term is left, so there is nothing to
        search."""
        kept = tuple(dict.fromkeys(t for t in terms if t.strip()))
        if not kept:
            return None
        given = weights or {}
        weighed = tuple(float(given.get(t, 1.0)) for t in kept) if given else ()
        if not groups:
            return cls(kept, mode, weighed)
        own = iter(range(max(groups.values(), default=0) + 1, 1 << 30))
        numbers = tuple(groups[t] if t in groups else next(own) for t in kept)
        return cls(kept, mode, weighed, numbers)

    def group_of(self) -> dict[str, int] | None:
        """Term → its group, or None when every term is a group of its own."""
        return dict(zip(self.terms, self.groups, strict=True)) if self.groups else None

    def weighted(self, idf: Mapping[str, float]) -> dict[str, float]:
        """``idf`` (term → IDF) with each of this query's terms multiplied by its weight: what
        memdir's BM25 scores with (:mod:`memdir.index.bm25`)."""
        if not self.weights:
            return dict(idf)
        factor = dict(zip(self.terms, self.weights, strict=True))
        return {t: w * factor.get(t, 1.0) for t, w in idf.items()}


class IndexBackend(Protocol):
    """One workspace's index in one storage engine (the data; see the module docstring).

    Every method that writes runs in one transaction; :meth:`write` opens one explicitly so a
    caller can group several writes (the engine decides whether writes nest).
    """

    #: ``sqlite`` or ``postgres``: shown by ``memdir status``.
    backend: str

    def close(self) -> None: ...

    def write(self) -> AbstractContextManager[Any]:
        """A write transaction, committed on success and rolled back on error."""
        ...

    # -- meta ---------------------------------------------------------------------------

    def meta_get(self, key: str) -> str | None: ...

    def meta_set(self, key: str, value: str) -> None:
        """Set a meta value (call inside :meth:`write`)."""
        ...

    def generation(self) -> int:
        """A counter bumped by every write that changes chunks, vectors or the cache."""
        ...

    # -- files and chunks ---------------------------------------------------------------

    def file_rows(self, paths: Sequence[str] | None = None) -> dict[str, FileRow]:
        """The indexed files' rows by path: all of them, or those of ``paths`` it has."""
        ...

    def replace_file(
        self,
        *,
        path: str,
        source: str,
        hash: str,
        mtime_ns: int,
        size: int,
        warning: str | None,
        model: str,
        chunks: Sequence[NewChunk],
    ) -> None:
        """Replace everything indexed for ``path`` in one transaction."""
        ...

    def touch_file(self, path: str, mtime_ns: int, size: int) -> None:
        """Record a new (mtime, size) for a file whose content hash did not change."""
        ...

    def delete_files(self, paths: Iterable[str]) -> int:
        """Forget files (and their chunks); returns how many were removed."""
        ...

    def chunks_without_vectors(
        self,
        limit: int = 10_000,
        *,
        newest_first: bool = False,
        seqs: Sequence[int] | None = None,
        path: str | None = None,
    ) -> list[tuple[int, str, str]]:
        """``(seq, hash, text)`` of chunks that still need an embedding (embeddable ones only).

        Args:
            newest_first: the chunks of the most recently modified files first (a background
                embed serves what was just written before old notes); else in ``seq`` order.
            seqs: only among these chunks (a search's candidates).
            path: only this file's chunks (what a write just added).
        """
        ...

    def set_vectors(self, items: Sequence[tuple[int, str, Vectors]]) -> None:
        """Store the vectors ``(seq, cache key, vector)`` of existing chunks (skipping chunks
        deleted meanwhile); each is also the cached embedding of its key."""
        ...

    def chunks_by_seq(self, seqs: Sequence[int]) -> dict[int, ChunkRow]: ...

    def chunk_tokens(self, seqs: Sequence[int]) -> dict[int, list[str]]:
        """The stored keyword tokens of these chunks (what BM25 counts; no re-tokenising)."""
        ...

    def counts(self) -> dict[str, int]:
        """Row counts: files, chunks, vectors, pending_vectors, cached_embeddings."""
        ...

    def file_mtimes(self, *, source: str) -> dict[str, float]:
        """Modification times (seconds) of the indexed files from ``source``."""
        ...

    def file_warnings(self) -> dict[str, str]: ...

    # -- keyword search -----------------------------------------------------------------

    def keyword_candidates(
        self, query: KeywordQuery, idf: Mapping[str, float], limit: int, stats: CorpusStats
    ) -> list[tuple[int, str]]:
        """``(seq, stored tokens)`` of up to ``limit`` chunks matching ``query``, the most
        promising first (the engine's cheap pre-ranking; memdir re-scores them with BM25).

        Args:
            idf: memdir's IDF of each query term times its weight, for engines that
                pre-rank with it.
        """
        ...

    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        """How many chunks contain each term (terms in no chunk may be left out)."""
        ...

    def corpus_stats(self) -> CorpusStats: ...

    # -- vectors ------------------------------------------------------------------------

    def all_vectors(self) -> tuple[np.ndarray, Vectors]:
        """All stored vectors as ``(seqs, matrix)`` (exact search, tests, benchmarks)."""
        ...

    def vectors_by_seq(self, seqs: Sequence[int]) -> dict[int, Vectors]:
        """The stored vectors of these chunks (chunks without one are left out)."""
        ...

    # -- the companion model's codes (docs/design.md#search, "Across languages") ---------

    def companion_put(self, model: str, items: Sequence[tuple[str, bytes]]) -> None:
        """Store the companion ``model``'s codes of text hashes that have none yet."""
        ...

    def companion_by_seq(self, model: str, seqs: Sequence[int]) -> dict[int, bytes]:
        """The codes of these chunks' texts (chunks without one are left out)."""
        ...

    def chunks_without_companion(
        self, model: str, limit: int = 10_000
    ) -> list[tuple[int, str, str]]:
        """``(seq, hash, text)`` of embedded chunks whose text has no code yet."""
        ...

    # -- embedding cache ----------------------------------------------------------------

    def cache_get(
        self, provider: str, model: str, provider_key: str, hashes: Sequence[str]
    ) -> dict[str, Vectors]: ...

    def cache_put(
        self, provider: str, model: str, provider_key: str, items: Sequence[tuple[str, Vectors]]
    ) -> None: ...


@runtime_checkable
class SharedCopies(Protocol):
    """An engine that keeps every host's copy of a file (PostgreSQL): what ``memory_get``
    answers from when this host's file does not hold what a search found."""

    def file_copy(self, path: str, host: str | None = None) -> FileCopy | None:
        """``host``'s copy of ``path`` (default: the newest copy another host indexed), or
        None when the index holds none."""
        ...


@runtime_checkable
class OwnKeywordRanking(Protocol):
    """An engine that can also rank keyword matches by its own score (SQLite: FTS5's ``bm25()``).

    Not part of :class:`IndexBackend`: only ``[index] keyword_tokenizer = "plain"`` needs it, the
    OpenClaw-faithful benchmark configuration, whose raw-text tokens memdir's BM25 does not
    score. An engine without it refuses that tokenizer when it opens the index.
    """

    def own_keyword_ranking(self, query: KeywordQuery, limit: int) -> list[tuple[int, float]]:
        """``(seq, rank)`` by the engine's own ranking, best (most negative) first."""
        ...


@dataclass
class LifecycleOptions:
    """What a lifecycle factory is given to open one workspace's index."""

    #: ``[index] url`` (or ``MEMDIR_INDEX_URL``); empty for the default SQLite file.
    url: str
    #: The folder for the SQLite file and the local locks (``<workspace>/.memdir``).
    state_dir: Path
    #: The workspace's id in a shared database (see
    #: :func:`memdir.index.location.default_workspace_id`).
    workspace_id: str
    #: ``[index] vector_backend`` (SQLite: numpy or sqlite-vec).
    vector_backend: str
    #: ``[index] keyword_tokenizer``.
    keyword_tokenizer: str
    #: The embedder's dimensions (0: keyword-only), for engines that index vectors by size.
    dims: int = 0
    #: The embedding model of the index's vectors (None: keyword-only).
    embedding: EmbeddingSpace | None = None
    #: Why the state folder is not the workspace's own, if it is not (SQLite reports it).
    state_note: str | None = None
    #: Notes for ``memdir status`` (recoveries, fallbacks); the lifecycle appends to it.
    notes: list[str] = field(default_factory=list)
    #: ``[index] approximate_over``: chunks with a vector from which SQLite's vector search
    #: goes through an approximate index (``MEMDIR_ANN_OVER`` overrides it).
    approximate_over: int = 50_000


class IndexLifecycle(Protocol):
    """Where one workspace's index lives and how it is kept (see the module docstring)."""

    #: ``sqlite`` or ``postgres``.
    backend: str
    #: Shown by ``memdir status`` as the index location (a path, or a URL without password).
    location: str
    #: The vector search in use (``numpy``, ``sqlite-vec``, ``pgvector-hnsw``).
    vector_backend: str
    #: The engine's schema version (part of the index identity).
    schema_version: int

    def store(self) -> IndexBackend:
        """The open store (opened, reopened or recovered as needed)."""
        ...

    def write_lock(self, timeout: float = 60.0) -> AbstractContextManager[None]:
        """The one-writer-per-workspace lock, held around every write phase (re-entrant)."""
        ...

    def rebuild(self, fill: Callable[[IndexBackend], None]) -> None:
        """Build a fresh index with ``fill`` and publish it atomically: readers see the old
        index or the new one, and a failure keeps the old one. Call under :meth:`write_lock`."""
        ...

    def read(self, fn: Callable[[IndexBackend], Any], resync: Callable[[], object]) -> Any:
        """Run a read, recovering (and calling ``resync``) where the engine can."""
        ...

    def recover(self, exc: BaseException) -> bool:
        """After a write failed with ``exc``: when it says the index is damaged, replace it
        with a fresh one and return True (the caller syncs again); else False."""
        ...

    def vector_search(self, query: Vectors, k: int) -> list[tuple[int, float]]:
        """``(seq, cosine similarity)`` of the ``k`` nearest chunks, best first."""
        ...

    def warm(self) -> None:
        """Load now what the next vector search would wait for (the SQLite engine's matrix);
        nothing where the engine keeps it (PostgreSQL)."""
        ...

    def cache_key(self) -> object:
        """Changes whenever the index content may have changed (for per-generation caches)."""
        ...

    def close(self) -> None: ...
