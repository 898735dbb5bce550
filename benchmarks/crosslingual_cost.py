"""What finding notes in either language costs (issue 34): the first full index, the index's
size and a search, against another checkout in the same run.

    python benchmarks/crosslingual_cost.py --locomo ../shared/data/locomo/locomo10.json \\
        --baseline-src /tmp/memdir-main/src

The corpus is the cross-lingual test sets' workspaces (LoCoMo's test conversations in the
sessions layout, and our own held-out workspaces), each written afresh for each side. For each
side, in turn (this, the baseline, then both again, so that a change of load hits both):
``memdir index`` of each workspace in a new process with the local model (wall time; what a
machine compiles once — jieba's cache, the bridge's word pairs, USE's parsed state — is made
beforehand and timed apart), the index files' size, then each workspace's questions searched in
one warm process (p50 and p95 of ``Memory.search``). Each side runs
with its own ``MEMDIR_HOME``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
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
import _crosslingual as xl  # noqa: E402

SEARCH = """
import json, sys, time
from pathlib import Path
from memdir import Memory
root, queries = Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text())
with Memory(root) as mem:
    mem.search("warm up", record=False)
    laps = []
    for q in queries:
        t = time.perf_counter()
        mem.search(q, record=False)
        laps.append((time.perf_counter() - t) * 1000)
print(json.dumps(laps))
"""


Workspace = tuple[str, dict[str, str], list[str]]


def corpus(locomo: Path) -> list[Workspace]:
    """The workspaces of the cost corpus: (name, files, questions)."""
    import locomo as locomo_bench

    samples = {str(s["sample_id"]): s for s in json.loads(locomo.read_text(encoding="utf-8"))}
    out: list[Workspace] = []
    for xs in xl.load_all():
        if xs.split != "test":
            continue
        if xs.locomo:
            sessions = locomo_bench.load_sessions(samples[xs.locomo]["conversation"])
            files, _ = locomo_bench.build_layout(sessions, "sessions")
        else:
            files = xs.files
        out.append((xs.name, files, [q.query for q in xs.questions]))
    return out


def one_side(src: Path | None, workspaces: list[Workspace], cache: Path) -> dict[str, Any]:
    """Index every workspace afresh with the memdir of ``src`` (None: this checkout's) and
    search its questions; the new home starts with ``cache`` (what a machine compiles once:
    jieba's dictionary, the bridge's pairs, USE's parsed state)."""
    base = Path(tempfile.mkdtemp(prefix="memdir-xlcost-"))
    home = base / "home"
    shutil.copytree(cache, home / "cache")
    env = dict(os.environ, MEMDIR_HOME=str(home), MEMDIR_SERVICE="off")
    if src is not None:
        env["PYTHONPATH"] = str(src)
    index_s, size, laps = 0.0, 0, []
    for name, files, queries in workspaces:
        root = base / name
        subprocess.run([sys.executable, "-m", "memdir", "init", str(root)], env=env,
                       check=True, capture_output=True)  # fmt: skip
        for path, text in files.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "memdir", "-w", str(root), "index"], env=env,
                       check=True, capture_output=True)  # fmt: skip
        index_s += time.perf_counter() - start
        size += sum(p.stat().st_size for p in (root / ".memdir").glob("index.sqlite*"))
        qfile = base / f"{name}.json"
        qfile.write_text(json.dumps(queries, ensure_ascii=False), encoding="utf-8")
        done = subprocess.run([sys.executable, "-c", SEARCH, str(root), str(qfile)], env=env,
                              check=True, capture_output=True, text=True)  # fmt: skip
        laps += json.loads(done.stdout)
    shutil.rmtree(base, ignore_errors=True)
    laps.sort()
    return {
        "index_s": index_s,
        "index_bytes": size,
        "p50": statistics.median(laps),
        "p95": laps[int(0.95 * (len(laps) - 1))],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, required=True, help="locomo10.json")
    parser.add_argument("--baseline-src", type=Path, required=True, help="the other src folder")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    workspaces = corpus(args.locomo)
    files = [f for _, found, _ in workspaces for f in found.values()]
    queries = [q for _, _, asked in workspaces for q in asked]
    mb = sum(len(t.encode()) for t in files) / 1e6
    print(f"corpus: {len(files)} files, {mb:.2f} MB, {len(queries)} questions", file=sys.stderr)
    # What a machine compiles once (jieba's cache, the bridge's pairs, USE's state), timed
    # apart from the first index, then given to every side's new home.
    warm = Path(tempfile.mkdtemp(prefix="memdir-xlcost-home-"))
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "from memdir.bridge import default_bridge; "
                    "default_bridge(wait=True); from memdir.embeddings.local import "
                    "LocalEmbedder; LocalEmbedder('use').embed_query('x')"],
                   env=dict(os.environ, MEMDIR_HOME=str(warm)), check=True)  # fmt: skip
    compile_s = time.perf_counter() - start
    runs: dict[str, list[dict[str, Any]]] = {"this": [], "base": []}
    for n in range(args.rounds):
        for name, src in (("this", None), ("base", args.baseline_src.resolve())):
            found = one_side(src, workspaces, warm / "cache")
            runs[name].append(found)
            print(f"  round {n + 1} {name}: {found}", file=sys.stderr)
    info = common.machine_info()
    print(f"machine: {info['cpu']}, {info['cores']} cores, load {info['load_avg_at_start']}; "
          f"`{' '.join(sys.argv)}`")  # fmt: skip
    print(f"corpus: {len(workspaces)} workspaces, {len(files)} files ({mb:.2f} MB), "
          f"{len(queries)} questions; compiled once beforehand: {compile_s:.1f} s\n")  # fmt: skip
    print("| measure | this | base | this / base |")
    print("|---|---|---|---|")
    for key, label in (
        ("index_s", "first full index (s)"),
        ("index_bytes", "index size (MB)"),
        ("p50", "search p50 (ms)"),
        ("p95", "search p95 (ms)"),
    ):
        this = statistics.median(r[key] for r in runs["this"])
        base = statistics.median(r[key] for r in runs["base"])
        scale = 1e6 if key == "index_bytes" else 1
        print(f"| {label} | {this / scale:.2f} | {base / scale:.2f} | {this / base:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
