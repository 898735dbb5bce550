"""Embed pending chunks in the background, so that searches never wait for the model.

``memdir serve`` and ``memdir watch`` start a :class:`BackgroundEmbedder` with the process: it
embeds every chunk that has no vector yet, the most recently modified files first (what was just
written is what will be asked about), in small batches. It has an index connection of its own;
the model runs outside any lock and each batch is written in one short transaction under the
index write lock, so a search (which only reads) is never blocked, and another process can sync
between two batches. A search that meets candidates without a vector asks for them first
(:meth:`BackgroundEmbedder.prioritise`) and ranks them with an estimate meanwhile.

:meth:`BackgroundEmbedder.progress` says how far it has got: chunks done and pending, the rate
(chunks per second, a moving average) and the estimated time left. A provider error pauses it
(``retry_after`` seconds) and is reported there, never raised.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from types import TracebackType
from typing import Any

from memdir.embeddings.base import Embedder, token_batches
from memdir.errors import MemdirError, ProviderError
from memdir.index.companion_codes import BACKFILL_BATCH, backfill_codes, code_batch
from memdir.index.manager import IndexManager
from memdir.index.sync import embed_chunks, write_vectors

log = logging.getLogger("memdir.index.background")

#: Tokens per background batch: about a second of the local model on one core, so a batch's
#: write comes often and the model is never busy long when a search needs it.
BATCH_TOKENS = 1000
#: Weight of the newest batch in the moving average of the rate.
RATE_SMOOTHING = 0.3


@dataclass(frozen=True)
class EmbedProgress:
    """Where the background embedding stands.

    Attributes:
        running: the worker thread is alive.
        embedded: chunks it embedded since it started.
        pending: chunks still without a vector when it last looked.
        rate: chunks per second (moving average over its batches), None before the first.
        eta_seconds: ``pending / rate``, None when unknown.
        error: the last provider error, while it waits to retry.
        last_batch_seconds_ago: when any process last wrote a batch of vectors to this index
            (a worker in another process shows here), None when unknown.
    """

    running: bool
    embedded: int
    pending: int
    rate: float | None
    eta_seconds: float | None
    error: str | None = None
    last_batch_seconds_ago: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """``120 pending, 4.2 chunks/s, about 29 s left`` (what is known of it)."""
        parts = [f"{self.pending} pending"]
        if self.rate:
            parts.append(f"{self.rate:.1f} chunks/s")
        if self.eta_seconds:
            parts.append(f"about {format_duration(self.eta_seconds)} left")
        return ", ".join(parts)


def format_duration(seconds: float) -> str:
    """``42 s``, ``7 min``, ``2.5 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class BackgroundEmbedder:
    """A thread that embeds pending chunks (see the module docstring).

    Args:
        open_index: builds the worker's own :class:`IndexManager` (its own connection), called
            on the worker thread.
        embedder: the embedding provider (the same object the searches use: its documents
            run on ``document_threads``, a query on its own thread).
        pooling: ``chunking.pooling``.
        batch_tokens: tokens per batch.
        idle_wait: seconds between looks when nothing is pending (a :meth:`wake` cuts it).
        retry_after: seconds to wait after a provider error.
    """

    def __init__(
        self,
        open_index: Callable[[], IndexManager],
        embedder: Embedder,
        *,
        pooling: str = "chunk",
        batch_tokens: int = BATCH_TOKENS,
        idle_wait: float = 30.0,
        retry_after: float = 30.0,
    ) -> None:
        self._open_index = open_index
        self._embedder = embedder
        self._pooling = pooling
        self._batch_tokens = batch_tokens
        self._idle_wait = idle_wait
        self._retry_after = retry_after
        self._cond = threading.Condition()
        self._stopping = False
        self._woken = False
        self._priority: list[int] = []
        self._thread: threading.Thread | None = None
        self._embedded = 0
        self._pending = 0
        self._rate: float | None = None
        self._error: str | None = None

    # -- control --------------------------------------------------------------------------

    def start(self) -> BackgroundEmbedder:
        """Start the thread (idempotent); returns self."""
        with self._cond:
            if self._thread is not None and self._thread.is_alive():
                return self
            self._stopping = False
            self._thread = threading.Thread(target=self._run, name="memdir-embed", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop after the batch in progress (its vectors are kept) and wait for the thread."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def wake(self) -> None:
        """Something was written to the index: look for pending chunks now."""
        with self._cond:
            self._woken = True
            self._cond.notify_all()

    def prioritise(self, seqs: Sequence[int]) -> None:
        """Embed these chunks (a search's candidates without a vector) before the others."""
        with self._cond:
            known = set(self._priority)
            self._priority.extend(s for s in seqs if s not in known)
            self._woken = True
            self._cond.notify_all()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def progress(self) -> EmbedProgress:
        with self._cond:
            rate, pending = self._rate, self._pending
            return EmbedProgress(
                running=self.running,
                embedded=self._embedded,
                pending=pending,
                rate=round(rate, 3) if rate else None,
                eta_seconds=round(pending / rate, 1) if rate and pending else None,
                error=self._error,
            )

    def __enter__(self) -> BackgroundEmbedder:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- the worker -----------------------------------------------------------------------

    def _run(self) -> None:
        try:
            index = self._open_index()
        except MemdirError as exc:
            with self._cond:
                self._error = f"cannot open the index: {exc}"
            log.warning("memdir: background embedding not started: %s", exc)
            return
        try:
            while not self._stopping:
                wait = self._step(index)
                if wait:
                    self._wait(wait)
        finally:
            with contextlib.suppress(Exception):
                index.close()

    def _step(self, index: IndexManager) -> float:
        """Embed one batch; returns how long to wait before the next (0: at once)."""
        try:
            if not index.identity_matches():
                return self._idle_wait  # the first sync (re)builds the index; it wakes us
            batch = self._next_batch(index)
            if not batch:
                with self._cond:
                    self._pending = 0
                # Every chunk has its vector: code those the companion has not coded yet.
                coded = backfill_codes(
                    index.store(), index.companion, lock=index.write_lock, limit=BACKFILL_BATCH
                )
                return 0.0 if coded >= BACKFILL_BATCH else self._idle_wait
            started = time.perf_counter()
            vectors, cache_items = embed_chunks(
                index.store(), self._embedder, batch, self._pooling, index.chunking.line_vectors
            )
            codes = code_batch(index.companion, batch)
            seconds = time.perf_counter() - started
            write_vectors(
                index.store(),
                self._embedder,
                batch,
                vectors,
                cache_items,
                pooling=self._pooling,
                lock=index.write_lock,
                seconds=seconds,
                codes=(index.companion.model_id, codes) if index.companion is not None else None,
            )
            pending = index.counts()["pending_vectors"]
        except ProviderError as exc:
            with self._cond:
                self._error = str(exc)
            log.warning("memdir: background embedding paused: %s", exc)
            return self._retry_after
        except (MemdirError, OSError, RuntimeError) as exc:  # e.g. the index moved away
            with self._cond:
                self._error = str(exc)
            log.warning("memdir: background embedding: %s", exc)
            return self._retry_after
        with self._cond:
            self._error = None
            self._embedded += len(batch)
            self._pending = pending
            rate = len(batch) / seconds if seconds > 0 else None
            if rate is not None:
                old = self._rate
                self._rate = rate if old is None else old + RATE_SMOOTHING * (rate - old)
        return 0.0

    def _next_batch(self, index: IndexManager) -> list[tuple[int, str, str]]:
        """The asked-for chunks first, then the newest files', up to one batch of tokens."""
        with self._cond:
            wanted, self._priority = self._priority, []
        store = index.store()
        chosen = store.chunks_without_vectors(64, seqs=wanted) if wanted else []
        rank = {seq: i for i, seq in enumerate(wanted)}
        chosen.sort(key=lambda item: rank[item[0]])
        if len(chosen) < 64:
            seen = {seq for seq, _, _ in chosen}
            more = store.chunks_without_vectors(64, newest_first=True)
            chosen += [item for item in more if item[0] not in seen]
        if not chosen:
            return []
        _, end = next(token_batches([text for _, _, text in chosen], self._batch_tokens))
        return chosen[:end]

    def _wait(self, seconds: float) -> None:
        with self._cond:
            if not self._woken and not self._stopping:
                self._cond.wait(timeout=seconds)
            self._woken = False
