"""The background embedder (memdir.index.background) and the pending-chunk queries it uses."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from memdir import FakeEmbedder, Memory
from memdir.config.settings import load_config
from memdir.embeddings.base import Vectors
from memdir.index.background import EmbedProgress, format_duration
from tests.helpers import write
from tests.index.conftest import Backend


def wait_for(check: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def notes(root: Path, count: int) -> None:
    for i in range(count):
        write(
            root, f"memory/topic-{i:02d}.md", f"# Topic {i}\n\n- fact number {i} about topic {i}\n"
        )


def test_pending_chunks_newest_files_first_and_among_given_ones(workspace: Path) -> None:
    notes(workspace, 3)
    for i, age in enumerate((300, 100, 200)):  # topic-01 is the newest, topic-00 the oldest
        path = workspace / f"memory/topic-{i:02d}.md"
        os.utime(path, (time.time() - age, time.time() - age))
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        mem.index.sync(embed=False)
        store = mem.index.store()
        rows = store.chunks_by_seq([s for s, _, _ in store.chunks_without_vectors()])
        newest = [rows[s].path for s, _, _ in store.chunks_without_vectors(newest_first=True)]
        topics = [p for p in newest if p.startswith("memory/topic")]
        assert topics == ["memory/topic-01.md", "memory/topic-02.md", "memory/topic-00.md"]
        some = sorted(rows)[:2]
        assert [s for s, _, _ in store.chunks_without_vectors(seqs=some)] == some
        assert store.chunks_without_vectors(seqs=[]) == []


def test_the_worker_embeds_everything_pending_and_reports_progress(workspace: Path) -> None:
    notes(workspace, 12)
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        mem.index.sync(embed=False)
        assert mem.index.counts()["pending_vectors"] > 10
        worker = mem.start_background_embedding()
        assert worker is not None and mem.background is worker
        assert wait_for(lambda: mem.index.counts()["pending_vectors"] == 0)
        assert wait_for(lambda: worker.progress().pending == 0)
        progress = mem.embedding_progress()
        assert progress.running and progress.embedded == mem.index.counts()["vectors"]
        assert progress.rate is not None and progress.rate > 0
        assert progress.last_batch_seconds_ago is not None
        assert mem.status()["embedding_progress"]["running"] is True
    assert not worker.running  # Memory.close() stopped it


class BusyModel(FakeEmbedder):
    """A local model in the middle of a long background batch: a batch of documents waits for
    ``gate``; a few documents needed now (:class:`memdir.embeddings.base.UrgentDocuments`)
    do not."""

    def __init__(self, gate: threading.Event) -> None:
        super().__init__()
        self.gate = gate
        self.urgent: list[int] = []

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        self.gate.wait(10)
        return super().embed_documents(texts)

    def embed_documents_urgently(self, texts: Sequence[str]) -> Vectors:
        self.urgent.append(len(texts))
        return super().embed_documents(texts)


def test_with_a_worker_sync_only_indexes_files_and_a_search_embeds_beside_it(
    workspace: Path,
) -> None:
    gate = threading.Event()
    model = BusyModel(gate)
    with Memory(workspace, embedder=model) as mem:
        mem.start_background_embedding()
        notes(workspace, 4)
        report = mem.sync()  # returns before any vector exists: the worker has them
        assert report.added >= 4 and report.embedded == 0
        started = time.monotonic()
        response = mem.search("fact number 2 about topic 2")
        assert time.monotonic() - started < 5  # not behind the worker's batch
        top = response.results[0]
        assert top.path == "memory/topic-02.md"
        assert top.explain["vector_estimated"] is False  # embedded on the spot
        assert model.urgent
        gate.set()
        assert wait_for(lambda: mem.index.counts()["pending_vectors"] == 0)


def test_a_fact_written_beside_a_busy_worker_is_found_at_once_with_its_vector(
    backend: Backend, workspace: Path
) -> None:
    gate = threading.Event()
    model = BusyModel(gate)
    notes(workspace, 6)
    with Memory(workspace, embedder=model) as mem:
        mem.index.sync(embed=False)
        mem.start_background_embedding()  # busy with the notes until the gate opens
        written = mem.write("Grafana dashboards live in the infra-dashboards repo (probe-7)")
        assert written.written
        response = mem.search("where are the grafana dashboards kept")
        top = response.results[0]
        assert "probe-7" in top.snippet and top.path == written.path
        assert top.explain["vector_estimated"] is False
        gate.set()
        mem.close()  # the worker stops before the engine's test cleanup drops its rows


def test_without_a_worker_a_written_fact_is_embedded_by_the_search(
    backend: Backend, workspace: Path
) -> None:
    notes(workspace, 3)
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        mem.sync()
        written = mem.write("部署流水线改用 Argo CD，决定于本周 (probe-913)")
        top = mem.search("Argo CD 部署流水线").results[0]
        assert "probe-913" in top.snippet and top.path == written.path
        assert top.explain["vector_estimated"] is False


def test_a_provider_error_pauses_the_worker_and_is_reported(workspace: Path) -> None:
    notes(workspace, 2)
    broken = FakeEmbedder(fail_with="quota exceeded")
    config = load_config(workspace, {"search": {"embed_candidates": 0}})
    with Memory(workspace, config=config, embedder=broken) as mem:
        mem.index.sync(embed=False)
        mem.start_background_embedding()
        assert wait_for(lambda: mem.embedding_progress().error is not None)
        progress = mem.embedding_progress()
        assert "quota exceeded" in (progress.error or "") and progress.running
        assert mem.search("fact number 1").results  # searches go on with estimates


def test_status_without_a_worker_estimates_from_the_last_rate(workspace: Path) -> None:
    notes(workspace, 3)
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        mem.sync()  # records the rate of its batches
        notes(workspace, 6)
        mem.index.sync(embed=False)
        progress = mem.embedding_progress()
    assert not progress.running and progress.pending >= 3
    assert progress.rate is not None and progress.eta_seconds is not None
    assert "pending" in progress.describe() and "chunks/s" in progress.describe()


def test_progress_descriptions() -> None:
    state = EmbedProgress(running=True, embedded=10, pending=120, rate=4.0, eta_seconds=30.0)
    assert state.describe() == "120 pending, 4.0 chunks/s, about 30 s left"
    assert format_duration(42) == "42 s" and format_duration(420) == "7 min"
    assert format_duration(9000) == "2.5 h"


def test_watch_prints_embedding_progress_when_it_moves() -> None:
    from memdir.cli.serve_cmds import _show_embedding

    said: list[str] = []
    idle = EmbedProgress(running=True, embedded=0, pending=0, rate=None, eta_seconds=None)
    shown = _show_embedding(said.append, idle, None)
    assert said == []  # nothing to say before the first batch
    busy = EmbedProgress(running=True, embedded=8, pending=40, rate=4.0, eta_seconds=10.0)
    shown = _show_embedding(said.append, busy, shown)
    assert _show_embedding(said.append, busy, shown) == shown  # unchanged: said once
    done = EmbedProgress(running=True, embedded=48, pending=0, rate=4.0, eta_seconds=None)
    shown = _show_embedding(said.append, done, shown)
    broken = EmbedProgress(
        running=True, embedded=48, pending=3, rate=4.0, eta_seconds=None, error="quota"
    )
    _show_embedding(said.append, broken, shown)
    assert said == [
        "embedding: 8 done, 40 pending, 4.0 chunks/s, about 10 s left",
        "embedding: 48 done, nothing pending",
        "embedding paused: quota",
    ]
