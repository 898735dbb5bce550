"""The :class:`Memory` facade: the one place that wires workspace, index, embedder and search.

    from memdir import Memory

    with Memory("~/notes") as mem:
        for hit in mem.search("which port does redis use").results:
            print(hit.citation, hit.score)
        print(mem.get("memory/2026-11-30.md", from_line=1, lines=20).text)

Providers are injected (``embedder=``); when None they are built from the config. A provider
that cannot be built leaves memdir in keyword-only mode with a note in :meth:`Memory.status`;
it never fails a search.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from memdir.bridge import default_bridge
from memdir.bridge import prepare as prepare_bridge
from memdir.clock import now
from memdir.config.settings import MAX_RESULTS, Config, default_workspace, load_config
from memdir.dreaming.store import RECALL_NAME, RecallStore, record_recalls
from memdir.embeddings.base import Embedder, Vectors
from memdir.embeddings.companion import companion_for, language_means
from memdir.embeddings.registry import create_embedder
from memdir.errors import MemdirError, ProviderError, QueryError
from memdir.index.background import BackgroundEmbedder, EmbedProgress
from memdir.index.base import SharedCopies
from memdir.index.manager import IndexManager, IndexSettings
from memdir.index.sync import Progress, SyncReport, decode_markdown, embed_rate, scan_dirty
from memdir.index.unindexed import Unindexed, find_unindexed
from memdir.markdown.structure import PACK_TOKENS
from memdir.memory.browse import PRIVATE_FILES, BrowseMixin, GetResult, copy_lines, read_lines
from memdir.memory.governance import GovernanceMixin
from memdir.memory.lifecycle import LifecycleMixin
from memdir.rerank import Reranker, create_reranker
from memdir.safety.privacy import SecretGuard
from memdir.search.across import Across, LanguageMeans
from memdir.search.legs import QueryEmbeddings
from memdir.search.pipeline import run_search
from memdir.search.plan import SearchPlan, query_parts
from memdir.search.relevance import calibration_for
from memdir.search.types import EmbedMissing, SearchResponse
from memdir.text import has_cjk, load_segmenter
from memdir.workspace.fileio import read_regular_file
from memdir.workspace.layout import (
    MEMORY_DIR,
    MEMORY_FILE,
    USER_FILE,
    Skipped,
    Workspace,
    file_kind,
)

SCOPES = ("private", "shared")
#: The longest query accepted (characters); longer ones are refused, not truncated silently.
MAX_QUERY_CHARS = 4000
#: The most queries one search accepts.
MAX_QUERIES = 8
#: Files larger than this are not read to widen search results (a search stays fast).
WIDEN_MAX_BYTES = 1024 * 1024


class Memory(BrowseMixin, GovernanceMixin, LifecycleMixin):
    """Long-term memory over one workspace.

    Args:
        workspace: the workspace folder; default ``MEMDIR_WORKSPACE`` or ``~/.memdir/workspace``.
        config: settings; default :func:`memdir.config.settings.load_config` for this workspace.
        embedder: the embedding provider; default built from ``config.embedding``.
        reranker: the rerank stage's reranker; default built from ``config.rerank``
            (``provider = "none"`` for no rerank stage).
        scope: ``private`` (the owner's own sessions) or ``shared`` (group chats: MEMORY.md
            and USER.md are never returned).
    """

    def __init__(
        self,
        workspace: Path | str | None = None,
        *,
        config: Config | None = None,
        embedder: Embedder | None = None,
        reranker: Reranker | None = None,
        scope: str = "private",
    ) -> None:
        if scope not in SCOPES:
            raise MemdirError(f"unknown scope {scope!r}: choose private or shared")
        root = Path(workspace).expanduser() if workspace is not None else default_workspace()
        self.config = config if config is not None else load_config(root if root.is_dir() else None)
        privacy = self.config.privacy
        self.workspace = Workspace(
            root,
            self.config.index.extra_paths,
            audit_git=self.config.audit.git,
            secrets=SecretGuard(privacy.secrets, privacy.secret_patterns),
        )
        self.scope = scope
        self.notes: list[str] = list(self.workspace.warnings)
        removed = self.workspace.clean_stale_files()
        if removed:
            self.notes.append(f"removed {len(removed)} temp file(s) of killed writes")
        if embedder is None:
            embedder = self._build_embedder()
        self.embedder = embedder
        #: Codes chunks for search across languages (None: no companion for this embedder).
        self.companion = companion_for(embedder, self.config.embedding.companion)
        #: What turns a result's parts into its score (None: the fused score, uncalibrated).
        self.calibration = calibration_for(embedder) if self.config.search.calibrate else None
        self.index = self._open_index()
        #: Why the configured reranker cannot be used (every search then warns), or None.
        self.rerank_problem: str | None = None
        self.reranker = reranker if reranker is not None else self._build_reranker()
        #: What searches recalled from the daily logs (docs/design.md#dreaming); opened on first
        #: use.
        self.recalls = RecallStore(self.index.dir / RECALL_NAME)
        self._background: BackgroundEmbedder | None = None

    def reopen(self) -> Memory:
        """A new :class:`Memory` of the same workspace, settings, providers and scope, with
        an index connection of its own (no background embedder): what a server goes on with
        when a call it abandoned still holds this one."""
        return Memory(
            self.workspace.root,
            config=self.config,
            embedder=self.embedder,
            reranker=self.reranker,
            scope=self.scope,
        )

    def _open_index(self) -> IndexManager:
        """An index manager (one connection) for this workspace and embedder; an automatic
        ``[chunking] pack_tokens`` is decided here, where the embedder is known."""
        settings = IndexSettings.from_config(self.config)
        if settings.chunking.pack_tokens < 0:
            calibrated = calibration_for(self.embedder) is not None
            chunking = dataclasses.replace(
                settings.chunking, pack_tokens=PACK_TOKENS if calibrated else 0
            )
            settings = dataclasses.replace(settings, chunking=chunking)
        return IndexManager(
            self.workspace, embedder=self.embedder, settings=settings, companion=self.companion
        )

    def _build_embedder(self) -> Embedder | None:
        try:
            embedder = create_embedder(self.config.embedding)
        except ProviderError as exc:
            self.notes.append(f"embedding provider unavailable, keyword-only mode: {exc}")
            return None
        if embedder is None:
            self.notes.append("embedding provider is 'none': keyword-only mode")
        return embedder

    def _build_reranker(self) -> Reranker | None:
        try:
            return create_reranker(self.config)
        except ProviderError as exc:
            self.rerank_problem = f"reranker {self.config.rerank.provider} unavailable: {exc}"
            self.notes.append(self.rerank_problem)
            return None

    # -- context manager ------------------------------------------------------------------

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop the background embedding (if started) and close the index connection."""
        if self._background is not None:
            self._background.stop()
        self.index.close()
        self.recalls.close()

    # -- background embedding ---------------------------------------------------------------

    def start_background_embedding(self) -> BackgroundEmbedder | None:
        """Embed pending chunks on a thread of their own, newest files first, until
        :meth:`close` (``memdir serve`` and ``memdir watch`` call this at start-up).

        From then on :meth:`sync` and the searches' refresh only index files; a search asks
        the worker for its candidates that lack a vector and never waits for the model.
        Returns the worker, or None in keyword-only mode.
        """
        if self.embedder is None:
            return None
        if self._background is None:
            self._background = BackgroundEmbedder(
                self._open_index, self.embedder, pooling=self.config.chunking.pooling
            )
        return self._background.start()

    @property
    def background(self) -> BackgroundEmbedder | None:
        """The background embedder while it runs."""
        worker = self._background
        return worker if worker is not None and worker.running else None

    def _across(self) -> Across | None:
        """What a search needs to rank notes of the other language (``search/across.py``):
        the embedding model's language means, the chunks' stored vectors and, with a
        companion, its codes decoded; None for a model without shipped means."""
        if self.embedder is None:
            return None
        means = language_means(self.embedder.model_id)
        if means is None or self.embedder.provider != "local":
            return None
        index, companion = self.index, self.companion

        def chunk_vectors(seqs: Sequence[int]) -> Mapping[int, Vectors]:
            return dict(index.read(lambda store: store.vectors_by_seq(list(seqs))))

        def companion_vectors(seqs: Sequence[int]) -> Mapping[int, Vectors]:
            assert companion is not None
            codes = index.companion_codes(seqs)
            decoded = companion.decode(list(codes.values()))
            return dict(zip(codes, decoded, strict=True))

        return Across(
            LanguageMeans(*means),
            chunk_vectors,
            companion_vectors if companion is not None else None,
        )

    def _embed_missing(self) -> EmbedMissing | None:
        """How a search gets vectors for its candidates that lack one: it embeds the best few
        on the spot within the configured budget (beside a background embedder's batch, never
        behind it) and asks the background embedder, when one runs, for the rest."""
        if self.embedder is None:
            return None
        settings = self.config.search
        worker = self.background

        def embed(seqs: Sequence[int]) -> Mapping[int, Vectors]:
            found = self.index.embed_missing(
                seqs,
                limit=settings.embed_candidates,
                seconds=settings.embed_candidates_seconds,
                urgent=worker is not None,
            )
            if worker is not None:
                worker.prioritise([s for s in seqs if s not in found])
            return found

        return embed

    # -- tools ----------------------------------------------------------------------------

    def search(
        self,
        query: str | Sequence[str],
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        record: bool = True,
        variants: Sequence[str] = (),
    ) -> SearchResponse:
        """``memory_search``: the best snippets for ``query`` (docs/design.md#search).

        Several queries (a list) are searched in one call: each gets reserved result slots,
        the first fills the rest. ``variants`` are the first query written otherwise (its
        translation into the notes' other language, a paraphrase): searched with it as one
        question (:mod:`memdir.search.variants`). A single question about two things is split
        by the engine itself (``search.split_queries``). Files changed since the last sync are
        indexed first (stat only when nothing changed), so results are never stale. The
        daily-log hits are recorded as recalls for dreaming unless ``record`` is False (a person
        inspecting memory, as in ``memdir ui``, is not the agent recalling it).

        Raises:
            QueryError: a query is longer than :data:`MAX_QUERY_CHARS`, there are more than
                :data:`MAX_QUERIES` or none, or a limit is invalid.
        """
        queries = [query] if isinstance(query, str) else list(query)
        if not queries or len(queries) > MAX_QUERIES:
            raise QueryError(f"give 1 to {MAX_QUERIES} queries, not {len(queries)}")
        if isinstance(variants, str) or len(variants) > MAX_QUERIES:
            raise QueryError(f"give at most {MAX_QUERIES} variants, as a list")
        for text in [*queries, *variants]:
            if not isinstance(text, str):
                raise QueryError(f"a query must be text, not {type(text).__name__}")
            if len(text) > MAX_QUERY_CHARS:
                raise QueryError(f"query is {len(text)} chars; the limit is {MAX_QUERY_CHARS}")
        variants = tuple(dict.fromkeys(v for v in variants if v.strip() and v != queries[0]))
        if max_results is not None and not 1 <= max_results <= MAX_RESULTS:
            raise QueryError(f"max_results must be from 1 to {MAX_RESULTS}")
        parts, split = query_parts(queries[0], queries[1:], self.config.search.split_queries)
        # The queries are embedded while the index catches up with the files (search/legs.py).
        embeddings = QueryEmbeddings(self.embedder, [*parts, *variants], self.companion)
        report = self.index.refresh()
        if report is not None and report.chunks_written and self.background is not None:
            self.background.wake()
        plan = SearchPlan(
            parts=tuple(parts),
            split=split,
            embeddings=embeddings,
            config=self.config.search,
            now=now(),
            max_results=max_results,
            min_score=min_score,
            exclude=PRIVATE_FILES if self.scope == "shared" else frozenset(),
            calibration=self.calibration,
            reranker=self.reranker,
            rerank_top_n=self.config.rerank.top_n,
            lines_of=self._file_lines,
            embed_missing=self._embed_missing(),
            tight=self._structured_note if self.index.structured else None,
            # Compiled on first use by a long-running process only (docs/design.md#search).
            bridge=default_bridge(start=self.background is not None)
            if self.config.search.bridge
            else None,
            across=self._across(),
            variants=variants,
        )
        response = run_search(self.index, plan)
        if report is not None:
            response.warnings.extend(report.warnings)
        if self.rerank_problem:
            response.warnings.append(f"{self.rerank_problem}; fused order kept")
        counts = self.index.counts()
        response.index = {
            "files": counts["files"],
            "chunks": counts["chunks"],
            "pending_vectors": counts["pending_vectors"],
            "estimated_vectors": response.estimated,
            "synced_now": report.scanned if report else 0,
            "embedder": self.embedder.model_id if self.embedder else None,
        }
        if response.estimated and self.embedder is not None:
            response.warnings.append(self._pending_warning(response.estimated, counts))
        if record:
            record_recalls(self.recalls, response, now=now())  # never raises; warns instead
        return response

    def _pending_warning(self, estimated: int, counts: dict[str, int]) -> str:
        """What a search says when it ranked candidates whose vectors were still pending."""
        pending = counts["pending_vectors"]
        head = (
            f"ranked while vectors were pending: {estimated} candidate(s) had no vector yet "
            f"and were scored with an estimate ({pending} of {counts['chunks']} chunks pending)"
        )
        progress = self.embedding_progress()
        if progress.running:
            return f"{head}; background embedding is running ({progress.describe()})"
        return (
            f"{head}; `memdir index` embeds them (`memdir serve` and `memdir watch` do it in "
            "the background)"
        )

    def load_segmenter_for_chinese(self) -> bool:
        """Load jieba now when the notes hold Chinese (MEMORY.md, USER.md or the newest note
        has a CJK character), so a server's first Chinese search does not wait ~1 s for its
        dictionary. Whether it did."""
        root = self.workspace.root
        notes = (
            sorted((root / MEMORY_DIR).glob("*.md"))[-1:] if (root / MEMORY_DIR).is_dir() else []
        )
        for path in (root / MEMORY_FILE, root / USER_FILE, *notes):
            try:
                with path.open(encoding="utf-8", errors="replace") as fh:
                    head = fh.read(20_000)
            except OSError:
                continue
            if has_cjk(head):
                load_segmenter()
                return True
        return False

    @staticmethod
    def _structured_note(path: str) -> bool:
        """A note cut one block a chunk: anything but a daily log or a session note."""
        return file_kind(path) not in ("daily", "archive")

    def _file_lines(self, path: str) -> list[str] | None:
        """An indexed file's lines as they are now (for widening results); None if unreadable
        or larger than :data:`WIDEN_MAX_BYTES` (results from it are then shown as found)."""
        try:
            target = self.workspace.resolve_memory_path(path)
            data = read_regular_file(target, limit=WIDEN_MAX_BYTES + 1)
        except (MemdirError, OSError):
            return None
        if len(data) > WIDEN_MAX_BYTES:
            return None
        text, _ = decode_markdown(data, path)  # as the index saw it: no NUL reaches a snippet
        if text is None:
            return None
        lines = [line.removesuffix("\r") for line in text.split("\n")]
        if text.endswith("\n"):
            lines.pop()
        return lines

    def get(
        self,
        path: str,
        *,
        from_line: int | None = None,
        lines: int | None = None,
        copy: str | None = None,
    ) -> GetResult:
        """``memory_get``: the text of a memory file, or a line range of it
        (docs/design.md#memory_get). In an index shared by several hosts, ``copy`` (a search
        hit's) reads another host's copy from the shared rows, and a file this host does not
        have yet is read from the newest copy there; the result says so.

        Raises:
            PathNotAllowed: the path is outside the memory files, hidden in shared scope, or a
                binary file (one the indexer skips as binary or binary-like).
            QueryError: ``from_line`` or ``lines`` is below 1.
        """
        if from_line is not None and from_line < 1:
            raise QueryError("from must be 1 or more")
        if lines is not None and lines < 1:
            raise QueryError("lines must be 1 or more")
        target, shown = self._memory_path(path)
        if not copy:
            result = read_lines(target, shown, path, from_line, lines)
            if result.exists:
                return result
        found = None
        with contextlib.suppress(MemdirError):  # no index to ask: the file is simply missing
            store = self.index.store()
            if isinstance(store, SharedCopies):
                found = self.index.read(lambda _s: store.file_copy(shown, copy or None))
        if found is None:
            return GetResult(shown, "", from_line or 1, 0, 0, exists=False)
        return copy_lines(found, shown, from_line, lines, asked=bool(copy))

    # -- maintenance ----------------------------------------------------------------------

    def sync(
        self,
        *,
        force: bool = False,
        progress: Progress | None = None,
        paths: Iterable[str] | None = None,
        bridge: bool = True,
    ) -> SyncReport:
        """Index what changed (everything with ``force``; only among ``paths``, absolute paths
        of files a watcher saw change, when given), then embed pending chunks (with a
        background embedder running, it gets them instead and this returns at once).
        ``bridge``: without a background embedder, also compile the bridge's word pairs when
        this machine has not yet (docs/design.md#search, "Across languages"), beside the
        indexing, and wait for them; a file watcher's syncs leave it to the first search."""
        worker = self.background
        if worker is None:
            wanted = bridge and self.config.search.bridge
            bridge_thread = prepare_bridge() if wanted else None
            try:
                return self.index.sync(force=force, progress=progress, paths=paths)
            finally:
                if bridge_thread is not None:
                    bridge_thread.join()
        report = self.index.sync(force=force, progress=progress, embed=False, paths=paths)
        worker.wake()
        return report

    def unindexed(self) -> Unindexed:
        """Markdown files in the workspace that no indexing rule covers (``notes/``, the root),
        with the ``extra_paths`` line that would include them (:mod:`memdir.index.unindexed`)."""
        return find_unindexed(self.workspace)

    @property
    def config_file(self) -> Path:
        """The workspace's own config file (``.memdir/config.toml``)."""
        return self.workspace.state_dir / "config.toml"

    def embedding_progress(self) -> EmbedProgress:
        """How far embedding has got: the background worker's own figures while it runs,
        else the pending count and an estimate from the last recorded embedding rate."""
        last = self.index.read(embed_rate) if self.embedder is not None else None
        ago = round(max(0.0, time.time() - last[1]), 1) if last else None
        worker = self.background
        if worker is not None:
            return dataclasses.replace(worker.progress(), last_batch_seconds_ago=ago)
        pending = self.index.counts()["pending_vectors"] if self.embedder is not None else 0
        rate = last[0] if last and pending else None
        return EmbedProgress(
            running=False,
            embedded=0,
            pending=pending,
            rate=round(rate, 3) if rate else None,
            eta_seconds=round(pending / rate, 1) if rate and pending else None,
            last_batch_seconds_ago=ago,
        )

    def status(self) -> dict[str, Any]:
        """What is indexed, with which model and backend, what is dirty, and any warnings."""
        store = self.index.store()
        counts = self.index.counts()
        skipped: list[Skipped] = []
        dirty = scan_dirty(store, self.workspace, skipped)
        embedder = self.embedder
        return {
            "workspace": str(self.workspace.root),
            "backend": self.index.backend,
            "index_path": self.index.location,
            "scope": self.scope,
            "mode": "hybrid" if embedder is not None else "keyword-only",
            "embedding": {
                "provider": embedder.provider if embedder else "none",
                "model": embedder.model_id if embedder else None,
                "dims": embedder.dims if embedder else None,
                "note": getattr(embedder, "note", None),
            },
            "scores": {
                "calibrated": self.calibration is not None,
                "source": self.calibration.source if self.calibration else None,
                "min_score": (
                    self.config.search.min_score
                    if self.calibration
                    else self.config.search.raw_min_score
                ),
            },
            "vector_backend": self.index.vector_backend,
            "llm": _chat_llm(self.config),
            "identity_current": self.index.identity_matches(),
            **counts,
            "embedding_progress": self.embedding_progress().to_dict(),
            "unindexed": self.unindexed().to_dict(self.config_file),
            "dirty_files": len(dirty.changed),
            "deleted_files": len(dirty.deleted),
            "file_warnings": {
                **self.index.read(lambda s: s.file_warnings()),
                **dict(skipped),
            },
            "notes": [*self.notes, *self.index.notes],
            "audit": self.audit_status(),
        }


def _chat_llm(config: Config) -> dict[str, str]:
    """The LLM ``memdir chat`` would use and where its provider came from (for status)."""
    from memdir.llm.registry import chat_llm_choice  # not loaded by a search

    return chat_llm_choice(config).to_dict()
