"""Several processes on one workspace: two writers, a searcher and a watcher, all at once."""

from __future__ import annotations

import multiprocessing as mp
import re
import time
import traceback
from pathlib import Path
from typing import Any

from memdir import FakeEmbedder, Memory

WRITES = 500
NOW = "2026-11-30T10:00:00"
DAILY = "memory/2026-11-30.md"
BULLET = re.compile(r"^- worker (\d) wrote fact (\d+) code ([0-9a-f]{12})$")


def _code(worker: int, i: int) -> str:
    # Distinct words per fact, so no fact is a near duplicate of another.
    return f"{(worker * 7919 + i) * 2654435761 % 16**12:012x}"


def _writer(root: str, worker: int, out: Any) -> None:
    import os

    os.environ["MEMDIR_NOW"] = NOW
    try:
        with Memory(root, embedder=FakeEmbedder()) as mem:
            skipped = 0
            for i in range(WRITES):
                result = mem.write(f"worker {worker} wrote fact {i} code {_code(worker, i)}")
                skipped += not result.written
        out.put(("writer", worker, skipped, None))
    except BaseException:
        out.put(("writer", worker, -1, traceback.format_exc()))


def _searcher(root: str, stop: Any, out: Any) -> None:
    searches, errors = 0, []
    with Memory(root, embedder=FakeEmbedder()) as mem:
        while not stop.is_set():
            try:
                mem.search("worker wrote fact", max_results=3)
                searches += 1
            except Exception:
                errors.append(traceback.format_exc())
    out.put(("searcher", 0, searches, errors or None))


def _watcher(root: str, stop: Any, out: Any) -> None:
    from memdir.watch import WorkspaceWatcher

    errors: list[str] = []
    with (
        Memory(root, embedder=FakeEmbedder()) as mem,
        WorkspaceWatcher(
            mem, debounce=0.2, max_delay=1.0, on_error=lambda e: errors.append(repr(e))
        ) as watcher,
    ):
        stop.wait(120)
        syncs = watcher.syncs
    out.put(("watcher", 0, syncs, errors or None))


def test_two_writers_a_searcher_and_a_watcher(workspace: Path) -> None:
    ctx = mp.get_context("spawn")
    out, stop = ctx.Queue(), ctx.Event()
    root = str(workspace)
    helpers = [
        ctx.Process(target=_searcher, args=(root, stop, out)),
        ctx.Process(target=_watcher, args=(root, stop, out)),
    ]
    writers = [ctx.Process(target=_writer, args=(root, w, out)) for w in (0, 1)]
    started = time.monotonic()
    for process in helpers + writers:
        process.start()
    try:
        reports = [out.get(timeout=120) for _ in writers]
    finally:
        stop.set()
    reports += [out.get(timeout=60) for _ in helpers]
    for process in helpers + writers:
        process.join(timeout=30)
    elapsed = time.monotonic() - started

    by_kind = {(kind, n): (count, error) for kind, n, count, error in reports}
    for key, (_, error) in by_kind.items():
        assert error is None, f"{key} failed:\n{error}"
    assert by_kind[("writer", 0)][0] == 0 and by_kind[("writer", 1)][0] == 0  # nothing skipped
    assert by_kind[("searcher", 0)][0] > 0, "the searcher never completed a search"

    lines = (workspace / DAILY).read_text(encoding="utf-8").splitlines()
    assert lines[:2] == ["# 2026-11-30", ""]
    seen = set()
    for line in lines[2:]:
        match = BULLET.match(line)
        assert match, f"torn or foreign line: {line!r}"
        worker, i, code = int(match[1]), int(match[2]), match[3]
        assert code == _code(worker, i)
        seen.add((worker, i))
    assert len(lines) == 2 + 2 * WRITES
    assert seen == {(w, i) for w in (0, 1) for i in range(WRITES)}
    # Each writer's facts are in its own order.
    for worker in (0, 1):
        order = [int(m[2]) for m in map(BULLET.match, lines[2:]) if m and m[1] == str(worker)]
        assert order == sorted(order)
    print(
        f"\n2 x {WRITES} writes, {by_kind[('searcher', 0)][0]} searches, "
        f"{by_kind[('watcher', 0)][0]} watcher syncs: {elapsed:.1f} s"
    )
