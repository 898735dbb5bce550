"""Index lifecycle: identity change → atomic rebuild, corrupt index → moved aside and rebuilt,
read-only workspace, several processes at once.

Tests of what every backend must do take the ``backend`` fixture; the SQLite file's own
lifecycle (temporary file + swap, corrupt file, read-only workspace) is tested on SQLite only.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memdir import FakeEmbedder, Memory
from memdir.config import ChunkingConfig
from memdir.index.manager import IndexManager
from memdir.workspace import Workspace
from tests.helpers import write
from tests.index.conftest import Backend


def _chunking(tokens: int) -> ChunkingConfig:
    return ChunkingConfig(tokens=tokens, overlap=20)


def _manager(root: Path, embedder: FakeEmbedder | None, tokens: int = 400) -> IndexManager:
    return IndexManager(Workspace(root), embedder=embedder, chunking=_chunking(tokens))


def test_identity_change_rebuilds_into_a_new_file(workspace: Path) -> None:
    write(workspace, "memory/a.md", "\n".join(f"line {i} " + "word " * 30 for i in range(30)))
    first = _manager(workspace, FakeEmbedder(dims=32))
    first.sync()
    inode = os.stat(first.path).st_ino
    chunks_before = first.store().counts()["chunks"]
    first.close()

    second = _manager(workspace, FakeEmbedder(dims=48), tokens=200)
    assert not second.identity_matches()
    second.sync()
    assert second.identity_matches()
    assert os.stat(second.path).st_ino != inode  # swapped in, not edited in place
    assert second.store().counts()["chunks"] > chunks_before
    assert second.store().counts()["pending_vectors"] == 0
    assert not list(second.dir.glob("index.sqlite.rebuild-*"))


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

    def boom(self: Workspace):  # type: ignore[no-untyped-def]
        raise RuntimeError("disk on fire")
        yield from original(self)

    Workspace.iter_files = boom  # type: ignore[method-assign]
    try:
        with pytest.raises(RuntimeError, match="disk on fire"):
            second.sync()
    finally:
        Workspace.iter_files = original  # type: ignore[method-assign]
    second.close()
    third = backend.manager(workspace, FakeEmbedder(dims=32), chunking=_chunking(400))
    assert third.identity_matches()
    assert third.store().keyword_search('"kept"', 5)
    assert not list(third.dir.glob("index.sqlite.rebuild-*"))


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_bytes(b"this is not a database at all" * 100),
        lambda p: p.write_bytes(p.read_bytes()[:1500]),
        lambda p: p.write_bytes(b""),
    ],
    ids=["garbage", "truncated", "empty"],
)
def test_corrupt_index_is_moved_aside_and_rebuilt(workspace: Path, damage) -> None:  # type: ignore[no-untyped-def]
    write(workspace, "memory/a.md", "phoenix rises from ashes\n")
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        mem.sync()
        path = mem.index.path
    mem.index.store().conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    mem.close()
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    damage(path)
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        results = mem.search("phoenix").results
        assert results and results[0].path == "memory/a.md"
        status = mem.status()
    assert status["files"] == 2


def test_garbage_index_leaves_a_corrupt_copy(workspace: Path) -> None:
    write(workspace, "memory/a.md", "phoenix\n")
    state = workspace / ".memdir"
    (state / "index.sqlite").write_bytes(b"garbage" * 1000)
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        assert mem.search("phoenix").results
        assert any("moved to" in n for n in mem.status()["notes"])
    assert list(state.glob("index.sqlite.corrupt-*"))


def _make_readonly(path: Path) -> bool:
    """Make a folder unwritable, even for root when chattr works. False if impossible."""
    if os.geteuid() != 0:
        os.chmod(path, 0o555)
        return True
    if shutil.which("chattr") is None:
        return False
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
    return done.returncode == 0


def _undo_readonly(path: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True)
    os.chmod(path, 0o755)


def test_read_only_workspace_is_searchable(tmp_path: Path) -> None:
    root = tmp_path / "ro"
    write(root, "MEMORY.md", "# Memory\n- the answer is fortytwo\n")
    if not _make_readonly(root):
        pytest.skip("cannot make a folder read-only here")
    try:
        with Memory(root, embedder=FakeEmbedder()) as mem:
            results = mem.search("fortytwo").results
            status = mem.status()
        assert results and results[0].path == "MEMORY.md"
        assert "not writable" in " ".join(status["notes"])
        assert not (root / ".memdir").exists()
    finally:
        _undo_readonly(root)


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
        assert mem.status()["files"] == 21
        assert mem.status()["chunks"] == 21


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
