"""Cold start: ``memdir search`` in a new process, as a person or a hook runs it.

    python benchmarks/coldstart.py                   # 10 runs of each query, real model
    python benchmarks/coldstart.py --runs 5 --embedder fake

The 39-file developer workspace of ``_devws.py`` is written to a temporary folder and indexed
once (``memdir index``, not timed). Then each query (English, Chinese, mixed) runs ``--runs``
times as ``memdir -w WS search QUERY`` in a fresh process (the console script of this Python),
and the wall time of each whole process is taken: interpreter start, imports, opening the index,
the model's load, the query's embedding and the search. The report gives min / median / max per
query, the 1-minute load average before the runs, and the modules that took longest to import
in one extra run (``python -X importtime``), so a regression names its cause.

``MEMDIR_HOME`` is a temporary folder, so the jieba dictionary cache starts empty once (the
first, untimed, warm-up run builds it) as it would after installing memdir.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

import _common as common  # noqa: E402
import _devws  # noqa: E402

QUERIES = (
    "Redis 分布式锁用哪个端口?",
    "which port does the staging database listen on",
    "payout batch worker 的重试策略",
)


def _memdir(ws: Path, *args: str, env: dict[str, str], extra: tuple[str, ...] = ()) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *extra, "-m", "memdir", "-w", str(ws), *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"memdir {' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return seconds


def _import_costs(ws: Path, query: str, env: dict[str, str], top: int) -> list[tuple[str, int]]:
    """The ``top`` third-party packages that took longest to import in one search (cumulative
    microseconds of the package's own import, wherever it was first imported)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "memdir", "-w", str(ws), "search", query],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    costs: dict[str, int] = {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        parts = line.partition(":")[2].split("|")
        if len(parts) != 3 or not parts[1].strip().isdigit():
            continue
        name = parts[2].strip()
        if "." not in name and not name.startswith(("memdir", "_")):
            costs[name] = max(costs.get(name, 0), int(parts[1]))
    return sorted(costs.items(), key=lambda r: -r[1])[:top]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="timed runs per query")
    parser.add_argument("--embedder", default="local", choices=("local", "fake"))
    parser.add_argument("--top-imports", type=int, default=8)
    args = parser.parse_args(argv)

    files, _facts = _devws.build()
    info = common.machine_info()
    with tempfile.TemporaryDirectory(prefix="memdir-cold-") as tmp:
        ws = Path(tmp) / "ws"
        common.write_files(ws, files)
        env = {**os.environ, "MEMDIR_HOME": str(Path(tmp) / "home")}
        _memdir(ws, "init", env=env)
        if args.embedder == "fake":
            with (ws / ".memdir" / "config.toml").open("a", encoding="utf-8") as config:
                config.write('\n[embedding]\nprovider = "fake"\n')
        common.log("indexing the workspace (not timed)")
        _memdir(ws, "index", env=env)
        _memdir(ws, "search", QUERIES[0], env=env)  # warm-up: OS file cache, jieba's cache
        load = os.getloadavg()[0]
        rows = []
        for query in QUERIES:
            times = [_memdir(ws, "search", query, env=env) for _ in range(args.runs)]
            common.log(f"{query}: median {statistics.median(times):.2f} s")
            rows.append(
                [
                    query,
                    f"{min(times):.2f}",
                    f"{statistics.median(times):.2f}",
                    f"{max(times):.2f}",
                ]
            )
        imports = _import_costs(ws, QUERIES[0], env, args.top_imports)
    title = "Cold start: `memdir search` in a new process"
    print(common.report_header(title, "coldstart.py", sys.argv[1:], info))
    print(f"Workspace: `_devws.py`, {len(files)} files, indexed; load average before: {load:.2f}.")
    print(f"Each query run {args.runs} times, each in a new process (wall seconds).\n")
    print(common.md_table(["query", "min s", "median s", "max s"], rows))
    print("\nSlowest third-party imports of one search (`-X importtime`, cumulative):\n")
    print(common.md_table(["module", "ms"], [[m, f"{us / 1000:.0f}"] for m, us in imports]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
