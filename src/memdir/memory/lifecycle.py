"""The writing methods of the :class:`~memdir.memory.facade.Memory` facade
(docs/design.md#lifecycle): ``memory_write``, dreaming, and what a conversation leaves in memory —
extraction, the memory flush before a compaction, the session archive and auto-capture.

Every way in that runs the lifecycle (the chat agent, Claude Code's hooks, the CLI) calls these
methods: the workspace, the clock and the providers are the facade's business, not theirs.
:class:`LifecycleMixin` is part of ``Memory`` (it keeps the facade's module small); its methods
need only what :class:`_Living` names.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from memdir.clock import now
from memdir.config.settings import Config
from memdir.embeddings.base import Embedder
from memdir.errors import MemdirError, PathNotAllowed
from memdir.workspace.layout import MEMORY_FILE, Workspace

if TYPE_CHECKING:  # imported where used: a search loads none of them
    from memdir.dreaming.phases import DreamReport
    from memdir.dreaming.store import RecallStore
    from memdir.index.background import BackgroundEmbedder
    from memdir.index.manager import IndexManager
    from memdir.lifecycle.archive import ArchiveResult
    from memdir.lifecycle.capture import AutoCapture
    from memdir.lifecycle.extract import ExtractionReport
    from memdir.lifecycle.flush import FlushResult
    from memdir.lifecycle.write import WriteResult
    from memdir.llm.base import LLM, Message


class _Living(Protocol):
    """What :class:`LifecycleMixin` needs of the facade."""

    workspace: Workspace
    scope: str
    config: Config
    embedder: Embedder | None
    index: IndexManager
    recalls: RecallStore

    @property
    def background(self) -> BackgroundEmbedder | None: ...

    def _embed_written(self, path: str, line: int) -> None: ...


class LifecycleMixin:
    """``Memory``'s writing methods."""

    def write(
        self: _Living,
        text: str,
        *,
        target: str = "daily",
        section: str | None = None,
        via: str = "Memory.write",
    ) -> WriteResult:
        """``memory_write``: append a fact to today's daily log (``target="daily"``) or add it to
        a MEMORY.md ``section`` (``target="memory"``), skipping duplicates.

        The next :meth:`~memdir.memory.facade.Memory.search` finds it (changed files are indexed
        before every search). The write is recorded in the audit trail as ``write: via <via>``.

        Raises:
            PathNotAllowed: ``target="memory"`` in a shared session.
            MemdirError: empty or over-long text, unknown target or section.
        """
        from memdir.lifecycle.write import write_memory

        if self.scope == "shared" and target == "memory":
            raise PathNotAllowed(f"{MEMORY_FILE} cannot be written in a shared session")
        result = write_memory(
            self.workspace, text, target=target, section=section, now=now(), via=via
        )
        if result.written:
            self._embed_written(result.path, result.line)
        return result

    def _embed_written(self: _Living, path: str, line: int) -> None:
        """In a long-running process (a background embedder runs), index what a write just
        added and put its chunks (those of ``path`` that hold ``line``) first in the background
        embedder's queue, so that it is found by meaning too within a second or so, not only
        by its words; the write does not wait for the model (a chunk costs the local model
        ~0.5 s on one core). A search before then embeds it on the spot
        (docs/design.md#index, "Freshness"). Best effort: a failure leaves it pending."""
        worker = self.background
        if worker is None:
            return
        try:
            self.index.refresh()
            pending = self.index.read(
                lambda store: store.chunks_by_seq(
                    [seq for seq, _, _ in store.chunks_without_vectors(path=path)]
                )
            )
        except MemdirError:
            worker.wake()
            return
        worker.prioritise(
            sorted(s for s, c in pending.items() if c.start_line <= line <= c.end_line)
        )

    # -- dreaming -------------------------------------------------------------------------

    def dream(
        self: _Living, *, apply: bool, schedule: bool = False, diary: bool = False
    ) -> DreamReport:
        """Light, REM and deep phases over the recall store; promote to MEMORY.md
        (docs/design.md#dreaming).

        Args:
            apply: write MEMORY.md; False previews the same decisions and writes nothing.
            schedule: use the nightly gates (0.8 / 3 recalls / 3 queries, notes ≤ 30 days old,
                ≤ 10 a run) instead of the manual ones (0.75 / 3 / 2).
            diary: with ``apply``, append a plain summary of what changed to DREAMS.md.

        Raises:
            PathNotAllowed: in a shared session (dreaming writes MEMORY.md).
            WorkspaceError: MEMORY.md cannot be written.
        """
        from memdir.dreaming.phases import run_dream

        if self.scope == "shared":
            raise PathNotAllowed(f"dreaming writes {MEMORY_FILE}: run it in a private session")
        return run_dream(
            self.workspace,
            self.recalls,
            now=now(),
            apply=apply,
            schedule=schedule,
            diary=diary,
            snippet_chars=self.config.search.snippet_chars,
        )

    # -- from a conversation ----------------------------------------------------------------

    def extract(
        self: _Living,
        messages: Sequence[Message],
        *,
        llm: LLM,
        session: str | None = None,
        via: str | None = None,
    ) -> ExtractionReport:
        """Have ``llm`` pick the durable items of a conversation and save the new ones
        (docs/design.md#lifecycle):
        preferences, decisions, lessons, project facts and todos, each to its MEMORY.md section
        (the daily log in a shared session), skipping duplicates. Malformed answers are retried
        once, then reported as warnings; provider failures are warnings too. ``session`` and
        ``via`` go into the audit record.
        """
        from memdir.lifecycle.extract import extract_memories

        return extract_memories(
            self.workspace,
            messages,
            llm,
            now=now(),
            embedder=self.embedder,
            private=self.scope == "private",
            session=session,
            via=via,
        )

    def flush(
        self: _Living,
        messages: Sequence[Message],
        *,
        llm: LLM,
        system: str | None = None,
        max_tokens: int | None = None,
        session: str | None = None,
        timeout: float | None = None,
    ) -> FlushResult:
        """The memory flush before a compaction (docs/design.md#lifecycle): one silent turn of
        ``llm`` over ``messages`` whose lines are appended to today's daily log, deduplicated,
        none that reads like a prompt injection. ``system``: the conversation's system prompt;
        ``max_tokens``: the reply limit; ``session`` goes into the audit record; ``timeout``:
        seconds the model may take in all. A provider failure is in the result, never raised.
        """
        from memdir.lifecycle.flush import run_memory_flush

        return run_memory_flush(
            self.workspace,
            messages,
            llm,
            now=now(),
            system=system,
            max_tokens=max_tokens,
            session=session,
            timeout=timeout,
        )

    def archive(
        self: _Living,
        messages: Sequence[Message],
        *,
        session_id: str,
        started_at: datetime,
        llm: LLM | None,
        source: str,
        slug_timeout: float | None = None,
    ) -> ArchiveResult | None:
        """The session archive (docs/design.md#lifecycle): the last messages of a conversation
        to ``memory/<date>-<slug>.md``, named by ``llm`` (None, or no usable answer within
        ``slug_timeout`` seconds: the start time ``HHMM``). ``source`` says what the
        conversation was. None when there was nothing to archive.

        Raises:
            WorkspaceError: the archive cannot be written.
        """
        from memdir.lifecycle.archive import SLUG_TIMEOUT_S, archive_session

        return archive_session(
            self.workspace,
            messages,
            session_id=session_id,
            started_at=started_at,
            now=now(),
            llm=llm,
            source=source,
            slug_timeout=SLUG_TIMEOUT_S if slug_timeout is None else slug_timeout,
        )

    def capture(self: _Living, *, session: str | None = None) -> AutoCapture:
        """Auto-capture for one conversation (docs/design.md#lifecycle): what the user plainly
        asks to be remembered goes to today's daily log, without an LLM, at most three messages
        a conversation (make one per conversation). ``session`` goes into the audit record."""
        from memdir.lifecycle.capture import AutoCapture

        return AutoCapture(self.workspace, session=session)


__all__ = ["LifecycleMixin"]
