"""Search latency on a busy machine: idle against four CPU-bound processes.

    python benchmarks/busy.py                        # memdir's defaults and the old threads
    python benchmarks/busy.py --variants default --queries 30 --rounds 2
    python benchmarks/busy.py --variants default,blas-threads --notes 1000 --busy 0

The 39-file developer workspace (``_devws.py``) is indexed once (cached under ``--cache``);
with ``--notes N``, a workspace of N short notes (``_scale_data.short_notes``, the OpenClaw
plugin's benchmark) searched with its two facts' questions in turn. ``--busy 0`` runs the idle
state only.
Each variant then runs in a child process of its own (so its OpenMP settings apply from the
start): it opens ``Memory`` with the real local model, warms up with one search, times every
question of the workspace ``--rounds`` times (``Memory.search``, query embedding included),
then appends a line to a note and times the search that follows (it indexes the edit). Each
variant runs twice: with the machine as it is ("idle"), and while this script keeps
``--busy`` processes spinning (``while True: pass``, started and stopped by the script). The
report gives p50/p95 in both states, their ratio, and the 1-minute load average at the start
of each run: on a shared machine "idle" is only as idle as the others let it be.

Variants (environment of the child):

- ``default``: memdir's own settings: a query on one thread, documents on ``cpu_count - 1``,
  OpenMP wait policy passive;
- ``old``: the settings before issue #12: a query on every core (``MEMDIR_QUERY_THREADS`` =
  core count) with OpenMP's default (spinning) wait policy (``OMP_WAIT_POLICY=ACTIVE``);
- ``one-thread``: ``OMP_NUM_THREADS=1`` for everything, spinning wait policy;
- ``blas-threads``: memdir's settings, but numpy's BLAS left at its own thread count during a
  search (before memdir held it to one thread: ``search/pipeline.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

import _common as common  # noqa: E402
import _devws  # noqa: E402
import _runner  # noqa: E402
from _scale_data import SHORT_FACTS, short_notes  # noqa: E402

CORES = os.cpu_count() or 1
#: Read by the child only: "leave" runs searches with numpy's BLAS threads as they are.
_BLAS_SWITCH = "MEMDIR_BENCH_BLAS"
VARIANTS: dict[str, dict[str, str]] = {
    "default": {},
    "old": {"MEMDIR_QUERY_THREADS": str(CORES), "OMP_WAIT_POLICY": "ACTIVE"},
    "one-thread": {"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "ACTIVE"},
    "blas-threads": {_BLAS_SWITCH: "leave"},
}
#: Environment the variants start from: no thread setting of the caller leaks in.
CLEARED = (
    "OMP_NUM_THREADS",
    "OMP_WAIT_POLICY",
    "MEMDIR_QUERY_THREADS",
    "MEMDIR_DOCUMENT_THREADS",
    "OPENBLAS_NUM_THREADS",
    _BLAS_SWITCH,
)


def child(root: Path, queries: list[str], rounds: int) -> dict[str, Any]:
    """Run in the variant's own process: time the searches (see the module docstring)."""
    from memdir import Memory

    if os.environ.get(_BLAS_SWITCH) == "leave":
        import contextlib

        import memdir.search.pipeline as pipeline

        pipeline._one_blas_thread = contextlib.nullcontext  # type: ignore[assignment]
    with Memory(root) as mem:
        mem.search(queries[0], record=False)  # warm-up: model, caches, connection
        took = []
        for _ in range(rounds):
            for query in queries:
                start = time.perf_counter()
                mem.search(query, record=False)
                took.append((time.perf_counter() - start) * 1000.0)
        note = root / "memory" / "2026-11-27.md"
        with note.open("a", encoding="utf-8") as fh:
            fh.write(f"- busy benchmark edit {time.time()}\n")
        start = time.perf_counter()
        mem.search("busy benchmark edit", record=False)
        after_edit = (time.perf_counter() - start) * 1000.0
    return {"latencies_ms": took, "after_edit_ms": after_edit}


def run_variant(
    name: str, root: Path, queries: list[str], rounds: int, home: str
) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env.update(VARIANTS[name], MEMDIR_HOME=home)
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(root), "--rounds", str(rounds)],
        input=json.dumps(queries),
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"variant {name} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def start_busy(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def stop_busy(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.wait(timeout=10)


def summary(ms: list[float]) -> tuple[float, float]:
    return common.percentile(ms, 50) or 0.0, common.percentile(ms, 95) or 0.0


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Search latency on a busy machine.")
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help="comma-separated; a name may repeat"
    )
    parser.add_argument(
        "--busy", type=int, default=4, help="CPU-bound processes (default 4; 0: idle only)"
    )
    parser.add_argument("--notes", type=int, default=0, help="N short notes instead")
    parser.add_argument("--queries", type=int, default=60, help="questions per round")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--cache", type=Path, default=common.DEFAULT_CACHE)
    parser.add_argument("--json", type=Path, default=None, metavar="OUT")
    parser.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.child is not None:
        queries = json.loads(sys.stdin.read())
        print(json.dumps(child(args.child, queries, args.rounds)))
        return 0
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variants {unknown}: choose from {', '.join(VARIANTS)}")
    info = common.machine_info()
    if args.notes:
        files = short_notes(args.notes, seed=36)
        queries = [prompt for _path, _line, prompt in SHORT_FACTS] * (args.queries // 2)
    else:
        files, facts = _devws.build()
        queries = [f.query for f in facts][: args.queries]
    with tempfile.TemporaryDirectory(prefix="memdir-busy-") as home:
        with common.env("MEMDIR_HOME", home):
            from memdir import load_config
            from memdir.embeddings.local import LocalEmbedder

            runner = _runner.Runner(args.cache, fresh=False, embedder_kind="local")
            label = f"busy/notes-{args.notes}" if args.notes else "firstuse/devws"
            corpus = common.Corpus(label, files, queries)
            embedder = LocalEmbedder()
            root, _ = runner._prepare(corpus, load_config(None), embedder)
            info["embedder"] = embedder.note
        rows: list[list[str]] = []
        raw: dict[str, list[dict[str, Any]]] = {}
        for name in names:
            results: dict[str, Any] = {}
            for state in ("idle", "busy") if args.busy else ("idle",):
                load = os.getloadavg()[0]
                procs = start_busy(args.busy) if state == "busy" else []
                try:
                    if procs:
                        time.sleep(1.0)  # let them get going
                    results[state] = run_variant(name, root, queries, args.rounds, home)
                finally:
                    stop_busy(procs)
                results[state]["load_at_start"] = round(load, 2)
                common.log(
                    f"[{name}] {state}: p50 {summary(results[state]['latencies_ms'])[0]:.0f} ms"
                )
            raw.setdefault(name, []).append(results)  # a name listed twice runs twice
            states = list(results)
            p50s = {st: summary(results[st]["latencies_ms"]) for st in states}
            busy = p50s.get("busy", (0.0, 0.0))
            idle = p50s["idle"]
            rows.append(
                [
                    f"`{name}`",
                    f"{idle[0]:.0f} / {idle[1]:.0f}",
                    f"{busy[0]:.0f} / {busy[1]:.0f}" if "busy" in p50s else "—",
                    f"{busy[0] / idle[0]:.1f}×" if idle[0] and "busy" in p50s else "n/a",
                    " / ".join(f"{results[st]['after_edit_ms']:.0f}" for st in states),
                    " / ".join(str(results[st]["load_at_start"]) for st in states),
                ]
            )
    out = [common.report_header("Search latency on a busy machine", "busy.py", argv, info)]
    out.append(
        f"- Embedder: {info['embedder']}; {len(queries)} questions × {args.rounds} round(s) per "
        f"run; busy = {args.busy} processes spinning `while True: pass` on {CORES} cores"
    )
    headers = [
        "variant",
        "idle p50 / p95 ms",
        f"{args.busy} busy p50 / p95 ms",
        "busy / idle p50",
        "search after an edit, idle / busy ms",
        "load at start, idle / busy",
    ]
    out += ["", common.md_table(headers, rows)]
    print("\n".join(out))
    common.write_json(args.json, {"machine": info, "command": argv, "results": raw})
    return 0


if __name__ == "__main__":
    sys.exit(main())
