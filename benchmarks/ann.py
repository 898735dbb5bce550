"""The approximate vector index against exact search, in one run (issue 30).

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/ann.py --workspace DIR --samples FILE

``DIR`` is a hybrid workspace of ``benchmarks/scale.py`` (``--out OUT`` keeps them:
``OUT/files-10000-hybrid``, with ``OUT/samples.npy``), indexed with its sampled document vectors.
The queries are ``scale.py``'s own, embedded by the real local model. It reports, on stdout as
Markdown:

1. the vector leg alone: exact (the float32 matrix of every stored vector) against the
   approximate index (shortlist rescored from SQLite): first call, p50, recall@24 against exact;
   the index's build time and file size;
2. ``Memory.search`` p50 (query embedding included) with the exact search and with the
   approximate one, in interleaved rounds on the same index;
3. the first hybrid search in a new process, both ways;
4. an edit of one line synced as a file watcher does (``Memory.sync(paths=[it])``, its chunks
   embedded by the sampled embedder, so no model runs): the index's part of that sync, and
   bringing the approximate index in step;
5. the index's size on disk (``index.sqlite*`` and ``index.ann``) against the Markdown.

Exact search is chosen by ``MEMDIR_ANN_OVER`` set above the index's size; the code is the same.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

from _scale_data import CORPUS_END, SampledVectorEmbedder, make_queries  # noqa: E402
from _scale_timing import (  # noqa: E402
    log,
    machine_info,
    ms_stats,
    stopwatch,
    time_each,
    time_searches,
)

TOP_K = 24
EXACT = str(10**12)  # MEMDIR_ANN_OVER for an exact search
#: MEMDIR_ANN_OVER for the approximate search ("": memdir's own threshold; --ann-over).
APPROX = {"over": ""}


def _env(ann: bool, env: dict[str, str] | None = None) -> dict[str, str]:
    env = os.environ if env is None else env  # type: ignore[assignment]
    env.pop("MEMDIR_ANN_OVER", None)
    if not ann:
        env["MEMDIR_ANN_OVER"] = EXACT
    elif APPROX["over"]:
        env["MEMDIR_ANN_OVER"] = APPROX["over"]
    return env


def vector_leg(mem: Any, query_vectors: Sequence[np.ndarray]) -> dict[str, Any]:
    from memdir.index.sqlite import ann
    from memdir.index.sqlite.vectors import NumpyVectorSearch

    store = mem.index.store()
    exact = NumpyVectorSearch()
    exact_cold, exact_laps, truth = time_searches(
        lambda q: exact.search(store, q, TOP_K), query_vectors
    )
    exact = NumpyVectorSearch()  # frees the matrix before the build
    sidecar = store.path.with_name(ann.SIDECAR)
    sidecar.unlink(missing_ok=True)
    with stopwatch() as build:
        ann.AnnVectorSearch(store.path).warm(store)
    approx = ann.AnnVectorSearch(store.path)
    ann_cold, ann_laps, found = time_searches(
        lambda q: approx.search(store, q, TOP_K), query_vectors
    )
    assert approx.last == "ann"
    recall = [len(set(t) & set(f)) / TOP_K for t, f in zip(truth, found, strict=True)]
    return {
        "exact": {**ms_stats(exact_laps), "cold_ms": exact_cold.wall * 1000},
        "ann": {**ms_stats(ann_laps), "cold_ms": ann_cold.wall * 1000},
        "recall": float(np.mean(recall)),
        "recall_min": float(np.min(recall)),
        "build_s": build.wall,
        "ann_bytes": sidecar.stat().st_size,
    }


def searches(root: Path, config: Any, embedder: Any, queries: list[str], rounds: int) -> dict:
    from memdir import Memory

    out: dict[str, list[float]] = {"exact": [], "ann": []}
    for _ in range(rounds):
        for mode in ("exact", "ann"):
            _env(mode == "ann")
            with Memory(root, config=config, embedder=embedder) as mem:
                for q in queries[:5]:
                    mem.search(q)
                out[mode].append(ms_stats(time_each(mem.search, queries))["p50"])
    _env(True)
    return out


_FIRST = """
import sys
sys.path.insert(0, {here!r})
import numpy as np
from memdir import Memory
from memdir import load_config
from _scale_data import SampledVectorEmbedder
from memdir.embeddings.local import LocalEmbedder
config = load_config(None, overrides={{"embedding": {{"provider": "local"}}}})
embedder = SampledVectorEmbedder(LocalEmbedder(), np.load({samples!r}))
with Memory({root!r}, config=config, embedder=embedder) as mem:
    mem.search({query!r})
"""


def first_search(root: Path, samples: Path, query: str, ann: bool) -> float:
    env = _env(ann, os.environ.copy())
    code = _FIRST.format(here=str(_HERE), samples=str(samples), root=str(root), query=query)
    with stopwatch() as lap:
        subprocess.run([sys.executable, "-c", code], check=True, env=env)
    return lap.wall * 1000


def edits(root: Path, config: Any, embedder: Any, n: int) -> dict[str, Any]:
    """One line of ``n`` files edited, each synced as a watcher does; then the approximate index
    brought in step (what the next search, or the server's watcher, does)."""
    import random

    from memdir import Memory

    paths = sorted((root / "memory").rglob("*.md"))
    chosen = random.Random(7).sample(paths, n)
    originals = {p: p.read_bytes() for p in chosen}
    sync_ms, step_ms, rows = [], [], []
    _env(True)
    try:
        with Memory(root, config=config, embedder=embedder) as mem:
            mem.index.warm()
            for i, path in enumerate(chosen):
                lines = originals[path].decode("utf-8").split("\n")
                lines[len(lines) // 2] = f"- Edit {i} at {time.time_ns()}: the 缓存 moved to 6380."
                path.write_text("\n".join(lines), encoding="utf-8")
                with stopwatch() as lap:
                    mem.sync(paths=[str(path)])
                sync_ms.append(lap.wall * 1000)
                log = mem.index.store().link_log
                rows.append(sum(len(e.links) for e in list(log)[-4:] if e.links))
                with stopwatch() as lap:
                    mem.index.warm()
                step_ms.append(lap.wall * 1000)
    finally:
        for path, data in originals.items():
            path.write_bytes(data)
        with Memory(root, config=config, embedder=embedder) as mem:
            mem.sync()
    return {"sync_ms": sync_ms, "step_ms": step_ms, "rows": rows}


def sizes(root: Path) -> dict[str, int]:
    state = root / ".memdir"
    markdown = sum(p.stat().st_size for p in (root / "memory").rglob("*.md"))
    sqlite = sum(p.stat().st_size for p in state.glob("index.sqlite*") if p.is_file())
    ann = (state / "index.ann").stat().st_size if (state / "index.ann").exists() else 0
    return {"markdown": markdown, "sqlite": sqlite, "ann": ann}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--samples", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--edits", type=int, default=5)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--ann-over", default="", help="the threshold for the approximate runs (smoke tests)"
    )
    args = parser.parse_args(argv)
    APPROX["over"] = args.ann_over
    os.environ.setdefault("MEMDIR_NOW", f"{CORPUS_END.isoformat()}T12:00")

    from memdir import Memory, load_config
    from memdir.embeddings.local import LocalEmbedder

    real = LocalEmbedder()
    embedder = SampledVectorEmbedder(real, np.load(args.samples))
    config = load_config(None, overrides={"embedding": {"provider": "local"}})
    queries = make_queries(args.queries, args.seed)
    query_vectors = [np.asarray(real.embed_query(q), dtype=np.float32) for q in queries]
    root = args.workspace
    _env(True)
    with Memory(root, config=config, embedder=embedder) as mem:
        mem.sync()
        chunks = mem.index.counts()["vectors"]
        log(f"{chunks} vectors: the vector leg")
        legs = vector_leg(mem, query_vectors)
    log("Memory.search, interleaved")
    p50 = searches(root, config, embedder, queries, args.rounds)
    log("first search in a new process")
    first = {
        mode: [first_search(root, args.samples, queries[1], mode == "ann") for _ in range(2)]
        for mode in ("exact", "ann")
    }
    log("edits")
    edited = edits(root, config, embedder, args.edits)
    size = sizes(root)
    info = machine_info()
    print(f"- {info.get('cpu', '')}; load {os.getloadavg()[0]:.2f} at the end; {chunks} vectors")
    print()
    print("| | exact | approximate |")
    print("|---|---:|---:|")
    print(f"| vector top-24 p50 ms | {legs['exact']['p50']:.2f} | {legs['ann']['p50']:.2f} |")
    print(
        f"| vector top-24 first call ms | {legs['exact']['cold_ms']:.0f} "
        f"| {legs['ann']['cold_ms']:.0f} |"
    )
    print(
        f"| recall@24 against exact (min) | 1 | {legs['recall']:.4f} ({legs['recall_min']:.3f}) |"
    )
    ex, an = p50["exact"], p50["ann"]
    print(
        f"| `Memory.search` p50 ms, {args.rounds} rounds | {np.median(ex):.1f} "
        f"({', '.join(f'{x:.1f}' for x in ex)}) | {np.median(an):.1f} "
        f"({', '.join(f'{x:.1f}' for x in an)}) |"
    )
    print(
        f"| first search in a new process ms | {', '.join(f'{x:.0f}' for x in first['exact'])} "
        f"| {', '.join(f'{x:.0f}' for x in first['ann'])} |"
    )
    print()
    print(
        f"Approximate index: built in {legs['build_s']:.1f} s, {legs['ann_bytes'] / 1e6:.1f} MB. "
        f"Edits synced as a watcher does: sync {np.median(edited['sync_ms']):.1f} ms median "
        f"({', '.join(f'{x:.0f}' for x in edited['sync_ms'])}), then the index brought in step "
        f"{np.median(edited['step_ms']):.1f} ms median "
        f"({', '.join(f'{x:.0f}' for x in edited['step_ms'])}; "
        f"links changed by each sync {edited['rows']}). "
        f"Size: Markdown {size['markdown'] / 1e6:.1f} MB, index.sqlite {size['sqlite'] / 1e6:.1f} "
        f"MB ({size['sqlite'] / size['markdown']:.2f}×), with index.ann "
        f"{(size['sqlite'] + size['ann']) / 1e6:.1f} MB "
        f"({(size['sqlite'] + size['ann']) / size['markdown']:.2f}×)."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
