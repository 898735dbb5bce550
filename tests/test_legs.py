"""The two legs of a search started side by side (memdir.search.legs, docs/design.md#search)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memdir import Memory
from memdir.embeddings.base import Vectors
from memdir.embeddings.fake import FakeEmbedder
from memdir.search.legs import QueryEmbeddings
from memdir.search.plan import query_parts


class GatedEmbedder(FakeEmbedder):
    """Embeds a query only once ``gate`` is set (or fails after ``patience`` seconds), and
    records the thread it ran on."""

    def __init__(self, gate: threading.Event, patience: float = 10.0) -> None:
        super().__init__()
        self.gate, self.patience = gate, patience
        self.threads: list[str] = []
        self.started = threading.Event()

    def embed_query(self, text: str) -> Vectors:
        self.threads.append(threading.current_thread().name)
        self.started.set()
        if not self.gate.wait(self.patience):
            raise AssertionError("the query was embedded before the keyword leg started")
        return super().embed_query(text)


def test_the_embedding_starts_before_wait_and_runs_on_its_own_thread() -> None:
    gate = threading.Event()
    embedder = GatedEmbedder(gate)
    pending = QueryEmbeddings(embedder, ["alpha", "beta"])  # returns at once, gate still shut
    gate.set()
    warnings: list[str] = []
    vectors = pending.wait(warnings)
    assert sorted(vectors) == ["alpha", "beta"] and warnings == []
    assert np.allclose(vectors["alpha"], FakeEmbedder().embed_query("alpha"))
    assert embedder.threads == ["memdir-query", "memdir-query"]


def test_a_provider_failure_is_a_warning_and_anything_else_is_raised_by_wait() -> None:
    warnings: list[str] = []
    failing = FakeEmbedder(fail_with="HTTP 503 from the embedding server")
    assert QueryEmbeddings(failing, ["alpha"]).wait(warnings) == {}
    assert warnings and "HTTP 503" in warnings[0] and "keyword search only" in warnings[0]

    class Broken(FakeEmbedder):
        def embed_query(self, text: str) -> Vectors:
            raise KeyError("a bug in the embedder")

    with pytest.raises(KeyError, match="a bug in the embedder"):
        QueryEmbeddings(Broken(), ["alpha"]).wait([])


def test_nothing_starts_without_an_embedder_or_a_query() -> None:
    assert QueryEmbeddings(None, ["alpha"]).wait([]) == {}
    embedder = GatedEmbedder(threading.Event(), patience=0.0)
    assert QueryEmbeddings(embedder, ["  ", ""]).wait([]) == {}
    assert embedder.threads == []


def test_a_search_embeds_its_query_while_the_keyword_leg_runs(workspace: Path) -> None:
    (workspace / "memory" / "2026-03-01.md").write_text(
        "# Trip\n\nThe ferry to Hydra leaves Piraeus at 07:30.\n", encoding="utf-8"
    )
    (workspace / "memory" / "2026-02-27.md").write_text(
        "# Chores\n\nRenewed the passport and paid the water bill.\n", encoding="utf-8"
    )
    gate = threading.Event()
    embedder = GatedEmbedder(gate)
    with Memory(workspace, embedder=embedder) as mem:
        mem.sync()
        keyword_search = mem.index.keyword_search

        def keyword_leg(*args: Any, **kwargs: Any) -> Any:
            # The embedding waits for this: had the search embedded first, it would fail.
            gate.set()
            return keyword_search(*args, **kwargs)

        mem.index.keyword_search = keyword_leg  # type: ignore[method-assign]
        response = mem.search("when does the ferry leave")
    assert response.mode == "hybrid" and response.warnings == []
    assert response.results[0].path == "memory/2026-03-01.md"
    assert embedder.threads == ["memdir-query"]


def test_a_search_embeds_its_query_while_the_index_catches_up(workspace: Path) -> None:
    gate = threading.Event()
    gate.set()
    embedder = GatedEmbedder(gate)
    with Memory(workspace, embedder=embedder) as mem:
        mem.sync()
        (workspace / "memory" / "2026-03-02.md").write_text(
            "# Trip\n\nThe ferry back from Hydra is at 18:00.\n", encoding="utf-8"
        )
        refresh = mem.index.refresh

        def catching_up() -> Any:
            # Had the search embedded its query only after this, it would wait here in vain.
            assert embedder.started.wait(10), "the query embedding had not started"
            return refresh()

        mem.index.refresh = catching_up  # type: ignore[method-assign]
        response = mem.search("when is the ferry back")
    assert response.results[0].path == "memory/2026-03-02.md"  # indexed by that refresh
    assert embedder.threads == ["memdir-query"]


def test_query_parts() -> None:
    assert query_parts("a", ["b", "a", " "], "auto") == (["a", "b"], False)
    assert query_parts("ferry times", [], "off") == (["ferry times"], False)
    both = "What do Jon and Gina both have in common?"
    assert query_parts(both, [], "auto") == (
        [both, "What do Jon have in common?", "What do Gina have in common?"],
        True,
    )
    assert query_parts(both, [], "off") == ([both], False)


def test_a_search_multiplies_on_one_blas_thread_and_gives_the_threads_back(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a busy 2-core machine numpy's second BLAS thread made a search's small products 3×
    slower (363 against 120 ms p50 over 1,000 notes at load 3.9, benchmarks in
    docs/benchmarks.md); a host application's numpy keeps its threads between searches."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import memdir.search.pipeline as pipeline

    def blas_threads() -> list[int]:
        found = threadpoolctl.threadpool_info()
        return [i["num_threads"] for i in found if i["user_api"] == "blas"]

    before = blas_threads()
    if not before:
        pytest.skip("numpy has no BLAS that threadpoolctl can see")
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        seen: list[list[int]] = []
        real = pipeline.mmr_rerank

        def watched(*args: Any, **kwargs: Any) -> Any:
            seen.append(blas_threads())
            return real(*args, **kwargs)

        monkeypatch.setattr(pipeline, "mmr_rerank", watched)
        memory.write("the staging redis listens on port 6380")
        assert memory.search("staging redis port").results
        assert seen and all(threads == [1] * len(before) for threads in seen)
        assert blas_threads() == [2] * len(before)
