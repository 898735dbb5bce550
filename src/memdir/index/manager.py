"""The index of one workspace for one process, the same for every storage engine.

:class:`IndexManager` syncs the files into the index (:mod:`memdir.index.sync`), scores keyword
candidates with memdir's BM25 (:mod:`memdir.index.bm25`) and runs vector search. Where the data
lives and how it is kept — opening, the one-writer lock, rebuilds on an identity change,
recovery — is the engine's :class:`~memdir.index.base.IndexLifecycle`, chosen from
:data:`INDEX_ENGINES` by the scheme of ``[index] url`` (empty: :mod:`memdir.index.sqlite`, the
default; ``postgresql://``: :mod:`memdir.index.postgres`).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from memdir.config.choices import check_index_values
from memdir.config.settings import ChunkingConfig, Config, index_url
from memdir.embeddings.base import Embedder, Vectors, urgent_embedder
from memdir.errors import ConfigError, DiskFull, ProviderError
from memdir.index.base import (
    EmbeddingSpace,
    IndexBackend,
    IndexLifecycle,
    KeywordQuery,
    LifecycleOptions,
    OwnKeywordRanking,
)
from memdir.index.bm25 import bm25_search, bm25_to_score
from memdir.index.changes import scan_paths
from memdir.index.companion_codes import Coder, code_batch
from memdir.index.freshness import Freshness
from memdir.index.identity import index_identity as index_identity
from memdir.index.location import default_index_dir, default_workspace_id
from memdir.index.sync import (
    DirtyState,
    Progress,
    SyncReport,
    embed_chunks,
    embed_missing_lines,
    embed_pending,
    sync_files,
    write_vectors,
)
from memdir.index.term_stats import TermStatistics
from memdir.markdown.greedy import GREEDY_VERSION
from memdir.workspace.layout import Workspace

#: Meta key set while line vectors of a rebuilt index may be missing (a full sync fills them).
LINES_PENDING = "line_vectors_pending"
#: Line vectors kept in memory between searches (384 floats each: ~30 MB at this size).
LINE_VECTOR_MEMO = 20_000


#: ``[index] url`` scheme → ``"package:Lifecycle"`` of the engine that keeps such an index ("" is
#: the SQLite default). An engine is one package under ``memdir/index/`` plus one line here;
#: it is imported only when chosen (psycopg only for a ``postgresql://`` URL).
INDEX_ENGINES: dict[str, str] = {
    "": "memdir.index.sqlite:SqliteLifecycle",
    "postgresql": "memdir.index.postgres:PostgresLifecycle",
    "postgres": "memdir.index.postgres:PostgresLifecycle",
}


@dataclass(frozen=True)
class IndexSettings:
    """What the config decides about one workspace's index, in one value (see
    :meth:`from_config`); every field is checked when it is built.

    Args:
        url: where the index lives, resolved: empty for the SQLite file in the workspace, or a
            ``postgresql://`` URL (see :data:`INDEX_ENGINES`).
        workspace_id: the workspace's id in a shared database; empty:
            :func:`~memdir.index.location.default_workspace_id`.
        batch_tokens: the embedding batch size in tokens (``[embedding] batch_tokens``).
        approximate_over: ``[index] approximate_over`` (SQLite's approximate vector index).
    """

    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    vector_backend: str = "numpy"
    keyword_tokenizer: str = "memdir"
    batch_tokens: int = 8000
    url: str = ""
    workspace_id: str = ""
    approximate_over: int = 50_000

    def __post_init__(self) -> None:
        check_index_values(self.vector_backend, self.keyword_tokenizer, self.url)

    @classmethod
    def from_config(cls, config: Config) -> IndexSettings:
        """The settings of ``config`` (``MEMDIR_INDEX_URL`` and ``env:`` URLs resolved).

        Raises:
            ConfigError: the index URL names an unset variable or an unknown scheme.
        """
        return cls(
            chunking=config.chunking,
            vector_backend=config.index.vector_backend,
            keyword_tokenizer=config.index.keyword_tokenizer,
            batch_tokens=config.embedding.batch_tokens,
            url=index_url(config.index),
            workspace_id=config.index.workspace_id,
            approximate_over=config.index.approximate_over,
        )


def open_lifecycle(options: LifecycleOptions) -> IndexLifecycle:
    """The lifecycle for ``options.url``, chosen by its scheme (one of
    :data:`memdir.config.choices.INDEX_URL_SCHEMES`, checked with the settings).

    Raises:
        IndexStoreError: the engine's driver is not installed.
    """
    scheme = urlsplit(options.url).scheme.lower() if options.url else ""
    module, _, name = INDEX_ENGINES[scheme].partition(":")
    factory: Callable[[LifecycleOptions], IndexLifecycle] = getattr(
        importlib.import_module(module), name
    )
    return factory(options)


class IndexManager:
    """Owns the index of one workspace for one process.

    Args:
        settings: chunking, engine and search settings; default :class:`IndexSettings`
            (build them from a config with :meth:`IndexSettings.from_config`).
    """

    def __init__(
        self,
        workspace: Workspace,
        *,
        embedder: Embedder | None,
        settings: IndexSettings | None = None,
        companion: Coder | None = None,
    ) -> None:
        settings = settings or IndexSettings()
        self.workspace = workspace
        self.embedder = embedder
        #: Codes each embedded chunk for search across languages (None: no companion).
        self.companion = companion if embedder is not None else None
        self.settings = settings
        self.chunking = settings.chunking
        self.keyword_tokenizer = settings.keyword_tokenizer
        self.dir, note = default_index_dir(workspace)
        self.notes: list[str] = []
        self.workspace_id = settings.workspace_id or default_workspace_id(workspace)
        self.lifecycle = open_lifecycle(
            LifecycleOptions(
                url=settings.url,
                state_dir=self.dir,
                workspace_id=self.workspace_id,
                vector_backend=settings.vector_backend,
                keyword_tokenizer=settings.keyword_tokenizer,
                dims=embedder.dims if embedder else 0,
                state_note=note,
                notes=self.notes,
                approximate_over=settings.approximate_over,
                embedding=(
                    EmbeddingSpace(
                        embedder.provider, embedder.model_id, embedder.provider_key, embedder.dims
                    )
                    if embedder is not None
                    else None
                ),
            )
        )
        #: Decides what a search looks at first (a watcher may drive it: :mod:`memdir.watch`).
        self.freshness = Freshness(workspace)
        if self.chunking.boundaries == "auto":
            self.chunking = replace(self.chunking, boundaries=self._boundaries_in_use())
        self.identity = index_identity(
            embedder, self.chunking, self.keyword_tokenizer, schema=self.lifecycle.schema_version
        )
        self._counts: tuple[object, dict[str, int]] | None = None
        #: Corpus and query-term statistics, read once per index generation.
        self.terms = TermStatistics(self.read, self.lifecycle.cache_key)
        #: Line vectors read from the embedding cache, by text hash (bounded; see line_vectors).
        self._lines: dict[str, Vectors] = {}

    def _boundaries_in_use(self) -> str:
        """``greedy`` when the index was built with greedy chunks (chunker version 2), so that
        an upgrade keeps its chunks and vectors; else ``content`` (docs/design.md#chunking)."""
        try:
            stored = self.read(lambda store: store.meta_get("identity"))
            chunker = json.loads(stored).get("chunker") if stored else None
        except Exception:  # a damaged index: it is rebuilt anyway, with the new chunker
            return "content"
        return "greedy" if chunker == GREEDY_VERSION else "content"

    @property
    def structured(self) -> bool:
        """Whether notes other than daily logs and session notes are cut one block a chunk
        (:mod:`memdir.markdown.structure`)."""
        return self.chunking.structure and self.chunking.boundaries != "greedy"

    @property
    def backend(self) -> str:
        """The storage engine: ``sqlite`` or ``postgres``."""
        return self.lifecycle.backend

    @property
    def location(self) -> str:
        """Where the index lives: the SQLite path, or the database URL without password."""
        return self.lifecycle.location

    @property
    def path(self) -> Path:
        """The SQLite file (SQLite engine only; tests and benchmarks open it directly).

        Raises:
            AttributeError: the engine keeps no index file.
        """
        path: Path = getattr(self.lifecycle, "path")  # noqa: B009 (engine-specific)
        return path

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
        embed: bool = True,
        paths: Iterable[str] | None = None,
    ) -> SyncReport:
        """Full sync: rebuild when forced or the identity changed, then (with ``embed``) embed
        what is pending; ``paths``: look only at these files (absolute paths a watcher saw
        change: :func:`~memdir.index.changes.scan_paths`). A write that finds the index damaged
        lets the lifecycle replace it (:meth:`IndexLifecycle.recover`), then syncs again."""
        try:
            return self._sync(force=force, progress=progress, embed=embed, paths=paths)
        except Exception as exc:
            if not self.lifecycle.recover(exc):
                raise
            return self._sync(force=True, progress=progress, embed=embed, paths=None)

    def _sync(
        self, *, force: bool, progress: Progress | None, embed: bool, paths: Iterable[str] | None
    ) -> SyncReport:
        report = SyncReport()
        rebuilt = False
        with self.write_lock():
            store = self.store()
            if force or not self.identity_matches():
                self._rebuild(progress, report)
                rebuilt = True
            else:
                dirty = (
                    self.freshness.scan(store, report.skipped)
                    if paths is None
                    else scan_paths(store, self.workspace, paths)
                )
                self._sync_files(store, report, progress, dirty)
        if rebuilt and self.embedder is not None and self.identity["line_vectors"]:
            with self.write_lock(), self.store().write():
                self.store().meta_set(LINES_PENDING, "1")
        if not embed:
            report.pending_vectors = self.counts()["pending_vectors"]
            return report
        report = self._embed(progress=progress, report=report)
        if self.read(lambda s: s.meta_get(LINES_PENDING)) == "1":
            self._backfill_lines(report)
        return report

    def _backfill_lines(self, report: SyncReport) -> None:
        """Embed the lines of chunks whose vectors came from the cache in a rebuild (only in
        a full sync: a search does not wait for it)."""
        assert self.embedder is not None
        done = embed_missing_lines(
            self.store(),
            self.embedder,
            batch_tokens=self.settings.batch_tokens,
            report=report,
            lock=self.write_lock,
        )
        if done:
            with self.write_lock(), self.store().write():
                self.store().meta_set(LINES_PENDING, "0")

    def refresh(self) -> SyncReport | None:
        """Before a search: sync files whose (mtime, size) changed; None when nothing did.

        Nothing is embedded here: a search embeds the few candidates it needs
        (:meth:`embed_missing`), a background worker or ``memdir index`` the rest."""
        # Through read(): a lost database connection is reopened, a corrupt file recovered.
        try:
            if not self.read(self._identity_matches):
                return self.sync(embed=False)
            try:
                return self._refresh()
            except Exception as exc:
                if not self.lifecycle.recover(exc):
                    raise
                return self.sync(force=True, embed=False)
        except DiskFull as exc:  # search the index as it is; say why it may be behind
            report = SyncReport()
            report.warnings.append(str(exc))
            return report

    def _refresh(self) -> SyncReport | None:
        dirty = self.freshness.dirty(self.store())
        report = None
        if dirty:
            report = SyncReport()
            try:
                with self.write_lock():
                    self._sync_files(self.store(), report, dirty=dirty)
            except BaseException:
                self.freshness.forget()
                raise
        return report

    def _embed(self, *, progress: Progress | None, report: SyncReport) -> SyncReport:
        if self.embedder is None:
            return report
        return embed_pending(
            self.store(),
            self.embedder,
            batch_tokens=self.settings.batch_tokens,
            pooling=self.chunking.pooling,
            line_vectors=self.chunking.line_vectors,
            progress=progress,
            report=report,
            lock=self.write_lock,
            companion=self.companion,
        )

    def companion_codes(self, seqs: Sequence[int]) -> dict[int, bytes]:
        """The companion model's codes of these chunks (those that have one)."""
        if self.companion is None or not seqs:
            return {}
        model = self.companion.model_id
        return dict(self.read(lambda store: store.companion_by_seq(model, list(seqs))))

    def embed_missing(
        self, seqs: Sequence[int], *, limit: int, seconds: float, urgent: bool = False
    ) -> dict[int, Vectors]:
        """Embed, in this order, up to ``limit`` of these chunks that still lack a vector, two
        at a time, starting no new pair after ``seconds``; store them and return their vectors.

        For a search whose best candidates are not embedded yet: they compete with their real
        vectors at once. ``urgent``: beside a background embedder's batch, not behind it
        (:func:`~memdir.embeddings.base.urgent_embedder`). A provider error ends it quietly
        (the rest stay pending).
        """
        if self.embedder is None or limit <= 0 or not seqs:
            return {}
        embedder = urgent_embedder(self.embedder) if urgent else self.embedder
        rank = {seq: i for i, seq in enumerate(seqs)}
        pending = self.read(lambda store: store.chunks_without_vectors(len(seqs), seqs=seqs))
        pending = sorted(pending, key=lambda item: rank[item[0]])[:limit]
        deadline = time.perf_counter() + seconds
        out: dict[int, Vectors] = {}
        for start in range(0, len(pending), 2):
            if start and time.perf_counter() >= deadline:
                break
            batch = pending[start : start + 2]
            began = time.perf_counter()
            try:
                vectors, cache_items = embed_chunks(
                    self.store(), embedder, batch, self.chunking.pooling, self.chunking.line_vectors
                )
            except ProviderError:
                break
            codes = code_batch(self.companion, batch)
            write_vectors(
                self.store(),
                embedder,
                batch,
                vectors,
                cache_items,
                pooling=self.chunking.pooling,
                lock=self.write_lock,
                seconds=time.perf_counter() - began,
                codes=(self.companion.model_id, codes) if self.companion is not None else None,
            )
            out.update((seq, vec) for (seq, _, _), vec in zip(batch, vectors, strict=True))
        # As stored (an engine may keep them compactly): a later search scores the same.
        stored = self.read(lambda store: store.vectors_by_seq(list(out)))
        return {seq: stored.get(seq, vec) for seq, vec in out.items()}

    def _rebuild(self, progress: Progress | None, report: SyncReport) -> None:
        """Index every file into a fresh index, published atomically by the lifecycle."""

        def fill(fresh: IndexBackend) -> None:
            with fresh.write():
                fresh.meta_set("identity", json.dumps(self.identity, sort_keys=True))
            dirty = self.freshness.scan(fresh, report.skipped)
            self._sync_files(fresh, report, progress, dirty)

        self.lifecycle.rebuild(fill)

    def _sync_files(
        self,
        store: IndexBackend,
        report: SyncReport,
        progress: Progress | None = None,
        dirty: DirtyState | None = None,
    ) -> None:
        """Phase 1 of a sync into ``store`` (call under the write lock); ``dirty``: the files
        to look at, when a freshness check found them already."""
        sync_files(
            store,
            self.workspace,
            chunking=self.chunking,
            embedder=self.embedder,
            keyword_tokenizer=self.keyword_tokenizer,
            dirty=dirty,
            progress=progress,
            report=report,
        )

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

    def keyword_search(self, query: KeywordQuery, k: int) -> list[tuple[int, float]]:
        """``(seq, score in [0, 1))`` of the best keyword matches.

        With memdir's tokenizer, memdir's BM25 (:mod:`memdir.index.bm25`); with the ``plain``
        tokenizer (OpenClaw-faithful), the engine's own ranking
        (:class:`~memdir.index.base.OwnKeywordRanking`: FTS5's ``bm25()``); both mapped by
        ``s / (1 + s)``.
        """
        if self.keyword_tokenizer == "plain":
            hits = self.read(lambda s: _own_ranking(s).own_keyword_ranking(query, k))
            return [(seq, bm25_to_score(-rank)) for seq, rank in hits]
        idf = query.weighted(self.terms.idf(query.terms))
        stats = self.terms.corpus()
        hits = self.read(lambda s: bm25_search(s, query, k, stats, idf))
        return [(seq, bm25_to_score(score)) for seq, score in hits]

    def vector_search(self, query: Vectors, k: int) -> list[tuple[int, float]]:
        return list(self.read(lambda _store: self.lifecycle.vector_search(query, k)))

    def warm(self) -> None:
        """Load what the next hybrid search would wait for (:meth:`IndexLifecycle.warm`)."""
        if self.embedder is not None:
            self.read(lambda _store: self.lifecycle.warm())

    def vector_scores(self, query: Vectors, seqs: Sequence[int]) -> dict[int, float]:
        """Cosine similarity of ``query`` to each of these chunks that has a vector."""
        if not seqs:
            return {}
        found = self.read(lambda store: store.vectors_by_seq(list(seqs)))
        q = np.asarray(query, dtype=np.float32)
        return {seq: float(vec @ q) for seq, vec in found.items() if vec.shape == q.shape}

    def line_vectors(self, hashes: Sequence[str]) -> dict[str, Vectors]:
        """The cached embeddings of these line texts, keyed by the
        :func:`~memdir.markdown.chunking.text_hash` of the stripped line, for scoring the lines
        inside a candidate. Lines without one are left out (an index built with
        ``chunking.line_vectors`` off, or a line not embedded yet)."""
        if self.embedder is None or not hashes:
            return {}
        missing = [h for h in dict.fromkeys(hashes) if h not in self._lines]
        if missing:
            ids = (self.embedder.provider, self.embedder.model_id, self.embedder.provider_key)
            found = self.read(lambda store: store.cache_get(*ids, missing))
            if len(self._lines) + len(found) > LINE_VECTOR_MEMO:
                self._lines.clear()
            self._lines.update(found)
        return {h: self._lines[h] for h in hashes if h in self._lines}

    def keyword_scores(self, query: KeywordQuery, seqs: Sequence[int]) -> dict[int, float]:
        """The keyword leg's score (saturated memdir BM25) of chunks it did not return itself,
        from their stored index tokens, so that fusion sees both legs for every candidate.
        Empty for the ``plain`` tokenizer (FTS5's own bm25 cannot score a chosen row)."""
        if self.keyword_tokenizer != "memdir":
            return {}
        return self.terms.keyword_scores(query, seqs)

    def term_coverage(
        self, concepts: Sequence[Mapping[str, float]], seqs: Sequence[int]
    ) -> dict[int, float]:
        """See :meth:`TermStatistics.coverage <memdir.index.term_stats.TermStatistics.coverage>`."""
        return self.terms.coverage(concepts, seqs)

    def found_weights(self, concepts: Sequence[Mapping[str, float]]) -> list[float]:
        """See :meth:`TermStatistics.found_weights
        <memdir.index.term_stats.TermStatistics.found_weights>`."""
        return self.terms.found_weights(concepts)

    def close(self) -> None:
        self.lifecycle.close()


def _own_ranking(store: IndexBackend) -> OwnKeywordRanking:
    """``store`` as an engine with its own keyword ranking (the ``plain`` tokenizer needs one).

    Raises:
        ConfigError: the engine has none.
    """
    if not isinstance(store, OwnKeywordRanking):
        raise ConfigError(
            f"index.keyword_tokenizer 'plain' needs an engine that ranks keywords itself; "
            f"the {store.backend} index does not"
        )
    return store
