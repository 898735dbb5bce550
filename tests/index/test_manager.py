"""The index manager on every engine (the ``backend`` fixture): identity change → rebuild, a
failed rebuild keeps the old index, several processes at once. The SQLite file's own lifecycle
(temporary file + swap, corrupt file, read-only workspace) is in ``tests/index/sqlite/``.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memdir import FakeEmbedder, Memory
from memdir.config.settings import ChunkingConfig
from memdir.index.base import KeywordQuery
from memdir.workspace.layout import Workspace
from tests.helpers import memory_chunks, write
from tests.index.conftest import Backend


def _chunking(tokens: int) -> ChunkingConfig:
    return ChunkingConfig(tokens=tokens, overlap=20)


def test_identity_change_rebuilds_the_index(backend: Backend, workspace: Path) -> None:
    write(workspace, "memory/a.md", "\n".join(f"line {i} " + "word " * 30 for i in range(30)))
    first = backend.manager(workspace, FakeEmbedder(dims=32), chunking=_chunking(400))
    first.sync()
    chunks_before = first.store().counts()["chunks"]
    first.close()

    second = backend.manager(workspace, FakeEmbedder(dims=48), chunking=_chunking(200))
    assert not second.identity_matches()
    report = second.sync()
    assert second.identity_matches()
    counts = second.store().counts()
    assert counts["chunks"] > chunks_before
    assert counts["pending_vectors"] == 0 and counts["vectors"] == counts["chunks"]
    assert report.added == 2  # MEMORY.md and a.md, indexed afresh
    _, matrix = second.store().all_vectors()
    assert matrix.shape == (counts["chunks"], 48)


def test_rebuild_failure_keeps_the_old_index(backend: Backend, workspace: Path) -> None:
    write(workspace, "memory/a.md", "kept words\n")
    first = backend.manager(workspace, FakeEmbedder(dims=32), chunking=_chunking(400))
    first.sync()
    first.close()

    class Exploding(FakeEmbedder):
        def __init__(self) -> None:
            super().__init__(dims=16)

    second = backend.manager(workspace, Exploding(), chunking=_chunking(100))
    # Make phase 1 of the rebuild fail: the workspace listing raises.
    original = Workspace.iter_files

    def boom(self: Workspace, *args):  # type: ignore[no-untyped-def]
        raise RuntimeError("disk on fire")
        yield from original(self, *args)

    Workspace.iter_files = boom  # type: ignore[method-assign]
    try:
        with pytest.raises(RuntimeError, match="disk on fire"):
            second.sync()
    finally:
        Workspace.iter_files = original  # type: ignore[method-assign]
    second.close()
    third = backend.manager(workspace, FakeEmbedder(dims=32), chunking=_chunking(400))
    assert third.identity_matches()
    assert third.keyword_search(KeywordQuery(("kept",)), 5)
    assert not list(third.dir.glob("index.sqlite.rebuild-*"))


def _search_many(root: str, n: int, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    try:
        with Memory(root, embedder=FakeEmbedder()) as mem:
            for i in range(n):
                mem.search(f"topic {i % 7}")
        queue.put("ok")
    except Exception as exc:  # report any failure to the parent
        queue.put(f"{type(exc).__name__}: {exc}")


def test_concurrent_writers_and_searchers(backend: Backend, workspace: Path) -> None:
    for i in range(20):
        write(workspace, f"memory/n{i}.md", f"topic {i % 7} note {i}\n")
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_search_many, args=(str(workspace), 30, queue)) for _ in range(3)]
    for p in procs:
        p.start()
    # Meanwhile, keep editing files so searches have to sync.
    for i in range(40):
        write(workspace, f"memory/n{i % 20}.md", f"topic {i % 7} edited {i}\n")
    for p in procs:
        p.join(120)
    outcomes = [queue.get(timeout=5) for _ in procs]
    assert outcomes == ["ok"] * 3
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        mem.sync()
        status = mem.status()
        # The counters kept by every write agree with the rows, after racing writers.
        assert status["files"] == 21
        assert status["chunks"] == status["vectors"] == 20 + memory_chunks(workspace)
        assert status["pending_vectors"] == 0
        assert len(mem.index.store().all_vectors()[0]) == status["vectors"]


def test_search_in_subprocess_uses_fresh_python(backend: Backend, workspace: Path) -> None:
    """Another process sees what this one indexed (WAL / MVCC, no lingering locks)."""
    write(workspace, "memory/a.md", "shared visibility check\n")
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        mem.sync()
        code = (
            "import sys; from memdir import Memory, FakeEmbedder;"
            "m = Memory(sys.argv[1], embedder=FakeEmbedder());"
            "print(m.search('visibility').results[0].path)"
        )
        out = subprocess.run(
            [sys.executable, "-c", code, str(workspace)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
    assert out.stdout.strip() == "memory/a.md"
