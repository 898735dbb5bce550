"""How memdir scales: index size and build time, search latency, sync cost and embedding
throughput on generated workspaces of 1,000 and 10,000 files (issue 17).

    python benchmarks/scale.py              # full run: 1,000 and 10,000 files; writes its
                                            # report into docs/benchmarks.md
    python benchmarks/scale.py --quick      # smoke run on small workspaces (no docs written)
    python benchmarks/scale.py --out DIR    # keep (and reuse) the generated workspaces in DIR

The report goes to stdout as one Markdown block (and, with ``--docs``, between the markers of
docs/benchmarks.md); progress goes to stderr. It measures:

1. Synthetic workspaces generated from a seed: mixed Chinese/English daily logs
   ``memory/YYYY-MM-DD.md`` over two years and topic notes ``memory/<topic>/<n>.md``; build
   time, CPU time and index size of each, against the Markdown's size.
2. ``Memory.search`` latency (p50/p95, CPU) over ~200 en/zh/mixed queries, keyword-only
   (``embedding.provider = "none"``) and hybrid (query embedded by the real local model); the
   freshness check and the counts every search pays; the first search after opening, and in
   a new process (``python -c``: imports, jieba, the model, the vector codes).
3. Each leg against exact search: vector top-24 (exact over the decoded stored vectors) against an
   exact scan of the stored vectors; keyword top-24 against exact BM25 over every matching
   chunk (a sample of queries); stored vectors (centred int8, float16) against float32 on real
   vectors.
4. ``Memory.sync`` after editing one line of one file (its chunks re-embedded by the real
   model), and with nothing changed.
5. Embedding throughput: ``Memory.sync`` with the real model from an empty index against raw
   ``embed_documents`` on exactly the same texts and batches, in tokens a second.

Embedding a 10,000-file vault with the local model takes hours on two busy cores, so the
hybrid indexes get their document vectors from :class:`SampledVectorEmbedder` (see its
docstring), and the full embedding time is extrapolated from the measured tokens a second;
queries are always embedded by the real model.

Helpers next to this file: ``_scale_data.py`` (synthetic corpus, workspaces, sampled vectors),
``_scale_timing.py`` (stopwatch, percentiles, machine and load info) and ``_scale_report.py``
(the report); the names this module imports from them are importable from here too
(``scale.stopwatch`` etc.).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
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
    NOISE_SIGMA,  # noqa: F401  (scale_postgres.py reads it as scale.NOISE_SIGMA)
    SampledVectorEmbedder,
    index_bytes,
    make_queries,
    remove_index,
    write_workspace,
)
from _scale_report import Results, estimate_100k, render, write_docs  # noqa: E402
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
    time_searches,
)

TOP_K = 24
#: Queries whose keyword top-k is checked against exact BM25 (each scores every matching chunk).
KEYWORD_CHECKS = 20
DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


# -- benchmarks -------------------------------------------------------------------------------


@dataclass
class BuildResult:
    """How long building an index took and how big it is."""

    seconds: float
    cpu: float
    chunks: int
    vectors: int
    bytes: int
    reused: bool
    tokens: int  # estimated tokens embedded (the model's work)


def build_index(root: Path, config: Any, embedder: Any, *, rebuild: bool) -> BuildResult:
    """``Memory.sync()`` from an empty index, or reuse an up-to-date index built by an earlier
    run (its build figures are read back from ``.memdir/scale-build.json``)."""
    from memdir import Memory

    record = root / ".memdir" / "scale-build.json"
    if rebuild or not record.is_file():
        remove_index(root)
        record.unlink(missing_ok=True)
    with Memory(root, config=config, embedder=embedder) as mem:
        with stopwatch() as lap:
            report = mem.sync()
        counts = mem.index.counts()
    built = {"seconds": lap.wall, "cpu": lap.cpu, "tokens": report.embedded_tokens}
    reused = record.is_file() and not report.changed
    if reused:
        built = json.loads(record.read_text(encoding="utf-8"))
    else:
        record.write_text(json.dumps(built), encoding="utf-8")
    return BuildResult(
        float(built["seconds"]),
        float(built["cpu"]),
        counts["chunks"],
        counts["vectors"],
        index_bytes(root / ".memdir"),
        reused,
        int(built["tokens"]),
    )


def bench_search(mem: Any, queries: Sequence[str]) -> dict[str, float]:
    """``Memory.search`` latency per query. One untimed search runs first and is reported as
    ``cold_ms`` (loading the vector matrix, warming caches)."""
    with stopwatch() as cold:
        mem.search(queries[0])
    hits: list[int] = []
    stats = ms_stats(time_each(lambda q: hits.append(len(mem.search(q).results)), queries))
    stats["cold_ms"] = cold.wall * 1000.0
    stats["no_hit"] = sum(1 for h in hits if h == 0) / len(hits)
    # What every search pays besides ranking: the freshness check and the counts it reports.
    stats["refresh_ms"] = ms_stats(time_each(lambda _: mem.index.refresh(), range(20)))["p50"]
    counts = time_each(lambda _: mem.index.counts(), range(20))
    stats["counts_ms"] = ms_stats(counts)["p50"]
    return stats


_FIRST_SEARCH = """
import sys, time
sys.path.insert(0, {here!r})
import numpy as np
from memdir import Memory
from memdir import load_config
config = load_config(None, overrides={{"embedding": {{"provider": {provider!r}}}}})
embedder = None
if {samples!r}:
    from _scale_data import SampledVectorEmbedder
    from memdir.embeddings.local import LocalEmbedder
    embedder = SampledVectorEmbedder(LocalEmbedder(), np.load({samples!r}))
with Memory({root!r}, config=config, embedder=embedder) as mem:
    mem.search({query!r})
"""


def first_search_in_a_new_process(root: Path, query: str, samples: Path | None) -> float:
    """Milliseconds from starting Python to the end of its first search (imports, jieba, the
    model, the index's caches): what a ``memdir search`` from a shell pays."""
    code = _FIRST_SEARCH.format(
        here=str(_HERE),
        provider="local" if samples else "none",
        samples=str(samples) if samples else "",
        root=str(root),
        query=query,
    )
    with stopwatch() as lap:
        subprocess.run([sys.executable, "-c", code], check=True, env=os.environ.copy())
    return lap.wall * 1000.0


def bench_vectors(mem: Any, query_vectors: Sequence[np.ndarray], k: int) -> dict[str, Any]:
    """The vector leg's top-k (exact over the decoded stored vectors) against an exact scan of the
    same stored vectors: latency and recall@k."""
    from memdir.index.sqlite.vectors import NumpyVectorSearch

    store = mem.index.store()
    search = NumpyVectorSearch()
    cold, laps, found = time_searches(lambda q: search.search(store, q, k), query_vectors)
    seqs, matrix = store.all_vectors()
    recall = []
    for q, hits in zip(query_vectors, found, strict=True):
        scores = matrix @ q
        truth = set(seqs[np.argpartition(-scores, k - 1)[:k]].tolist())
        recall.append(len(truth & set(hits)) / k)
    return {**ms_stats(laps), "cold_ms": cold.wall * 1000.0, "recall": float(np.mean(recall))}


def bench_keywords(mem: Any, queries: Sequence[str], k: int, checks: int) -> dict[str, Any]:
    """The keyword leg's top-k against exact BM25 over every chunk that holds a query term."""
    from memdir.index.base import KeywordQuery
    from memdir.index.bm25 import PREFETCH, bm25_document, term_idf
    from memdir.text import query_terms

    built = [KeywordQuery.build(query_terms(q)) for q in queries]
    keyword = [q for q in built if q is not None]
    results: list[list[int]] = []
    laps = time_each(
        lambda q: results.append([s for s, _ in mem.index.keyword_search(q, k)]), keyword
    )
    store = mem.index.store()
    stats = store.corpus_stats()
    recall, before = [], []
    for query, hits in list(zip(keyword, results, strict=True))[:checks]:
        idf = term_idf(store, query.terms, stats)
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in query.terms)

        def exact_top(seqs: list[int], idf: dict[str, float] = idf) -> list[int]:
            scored = sorted(
                (
                    (bm25_document(tokens.split(), idf, stats), seq)
                    for seq, tokens in store.stored_tokens(seqs)
                ),
                key=lambda item: (-item[0], item[1]),
            )
            return [seq for _, seq in scored[:k]]

        every = [
            r[0]
            for r in store.conn.execute(
                "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (match,)
            )
        ]
        # Candidates as before issue 17: every matching row pre-ranked by FTS5's bm25().
        ranked = [
            r[0]
            for r in store.conn.execute(
                "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? "
                "ORDER BY bm25(chunks_fts) LIMIT ?",
                (match, k * PREFETCH),
            )
        ]
        truth = set(exact_top(every))
        size = max(1, min(k, len(truth)))
        recall.append(len(truth & set(hits)) / size)
        before.append(len(truth & set(exact_top(ranked))) / size)
    return {
        **ms_stats(laps),
        "recall": float(np.mean(recall)),
        "recall_fts_preranked": float(np.mean(before)),
        "checked": len(recall),
    }


def stored_recall(vectors: np.ndarray, queries: Sequence[np.ndarray]) -> dict[str, Any]:
    """Recall@k of exact search over the vectors as stored (centred int8; float16) against
    float32, on real vectors."""
    from memdir.index.sqlite.codec import decode, encode

    centre = vectors.mean(axis=0)
    forms = {
        "int8": decode(encode(vectors, centre), vectors.shape[1], centre),
        "f16": decode(encode(vectors, None), vectors.shape[1], None),
    }
    out: dict[str, Any] = {"vectors": len(vectors), "queries": len(queries)}
    for k in (6, 24):
        for name, stored in forms.items():
            kept = []
            for q in queries:
                truth = set(np.argpartition(-(vectors @ q), k - 1)[:k].tolist())
                kept.append(
                    len(truth & set(np.argpartition(-(stored @ q), k - 1)[:k].tolist())) / k
                )
            out[f"{name}@{k}"] = float(np.mean(kept))
    return out


def bench_incremental(
    root: Path, config: Any, real: Any, *, edits: int, seed: int
) -> dict[str, Any]:
    """``Memory.sync()`` after replacing one line of one file (``edits`` different files), then
    the same file edited again and synced as a file watcher does (``Memory.sync(paths=[it])``:
    no look at the other files), and with nothing changed. The edited files are restored (and
    re-synced) afterwards."""
    from memdir import Memory

    timed = TimedEmbedder(real)
    paths = sorted((root / "memory").rglob("*.md"))
    originals = {path: path.read_bytes() for path in random.Random(seed).sample(paths, edits)}
    edit_laps: list[Lap] = []
    embed_laps: list[Lap] = []
    embedded: list[int] = []
    watched: dict[str, list[Any]] = {"laps": [], "embed": [], "embedded": []}
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
                lines[len(lines) // 2 + 1] = f"- Edit {n}b at {time.time_ns()}: 缓存 again."
                path.write_text("\n".join(lines), encoding="utf-8")
                before = Lap(timed.documents.wall, timed.documents.cpu)
                with stopwatch() as lap:
                    report = mem.sync(paths=[str(path)])
                watched["laps"].append(lap)
                watched["embed"].append(
                    Lap(timed.documents.wall - before.wall, timed.documents.cpu - before.cpu)
                )
                watched["embedded"].append(report.embedded)
            unchanged = time_each(lambda _: mem.sync(), range(5))
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
        "watched": median_lap(watched["laps"]),
        "watched_index": median_lap(
            [
                Lap(a.wall - b.wall, a.cpu - b.cpu)
                for a, b in zip(watched["laps"], watched["embed"], strict=True)
            ]
        ),
        "watched_embedded": watched["embedded"],
        "unchanged": median_lap(unchanged),
    }


def bench_throughput(root: Path, config: Any, real: Any) -> dict[str, Any]:
    """``Memory.sync()`` with the real model from an empty index, against ``embed_documents`` on
    the same distinct texts in the same length-sorted, token-bounded batches as
    ``embed_pending``.

    Run as sync, raw, sync (the index deleted before each sync) so that a slow spell on a shared
    machine shows up as a difference between the two syncs instead of skewing the ratio. Also
    returns the real float32 vectors of the first sync (``samples``)."""
    from memdir import Memory
    from memdir.embeddings.base import token_batches
    from memdir.text import estimate_tokens

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
        timed = TimedEmbedder(real, keep=not len(samples))
        with Memory(root, config=config, embedder=timed) as mem:
            with stopwatch() as lap:
                mem.sync()
            store = mem.index.store()
            rows = store.chunks_by_seq([int(s) for s in store.all_vectors()[0]])
            unique = {row.text for row in rows.values()}
            texts = sorted(unique, key=lambda t: (estimate_tokens(t), t))
        if not len(samples):
            samples = np.stack(timed.kept)
        syncs.append(lap)
        in_model.append(timed.documents)
        log(f"  Memory.sync(): {lap.wall:.1f} s")
    return {
        "texts": len(texts),
        "tokens": sum(estimate_tokens(t) for t in texts),
        "batches": sum(1 for _ in token_batches(texts, config.embedding.batch_tokens)),
        "syncs": syncs,
        "in_model": in_model,
        "raw": raw,
        "samples": samples,
    }


def _chunking() -> str:
    from memdir.config.settings import ChunkingConfig

    c = ChunkingConfig()
    return f"at most {c.tokens} tokens, content-defined boundaries, overlap {c.overlap}"


# -- main -------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="memdir at scale: index size, search latency, sync cost and embedding "
        "throughput on generated workspaces of 1,000 and 10,000 files. Prints a Markdown "
        "report on stdout.",
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
    parser.add_argument(
        "--docs",
        type=str,
        help=f"write the report between the markers of this file (default {DOCS} for a full "
        "run, nothing for --quick); --docs '' writes nowhere",
    )
    args = parser.parse_args(argv)
    args.sizes = args.sizes or ([30, 120] if args.quick else [1000, 10000])
    args.queries = args.queries or (40 if args.quick else 200)
    args.edits = args.edits or (2 if args.quick else 5)
    args.throughput_files = args.throughput_files or (2 if args.quick else 24)
    if args.docs is None and not args.quick:
        args.docs = DOCS
    elif args.docs:
        args.docs = Path(args.docs)
    else:
        args.docs = None  # --docs '': write nowhere
    return args


def run(args: argparse.Namespace, out: Path) -> Results:
    """All measurements. The throughput run comes first: its real vectors seed the hybrid
    indexes."""
    from memdir import Memory, load_config
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
        chunking=_chunking(),
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
    np.save(out / "samples.npy", samples)
    sampled = SampledVectorEmbedder(real, samples)
    query_vectors = [real.embed_query(q) for q in queries]
    results.stored_recall = stored_recall(samples, query_vectors)

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
            keywords = bench_keywords(mem, queries, TOP_K, KEYWORD_CHECKS)
        search_keyword["process_ms"] = first_search_in_a_new_process(kw_ws.root, queries[1], None)
        log(f"  keyword-only search p50 {search_keyword['p50']:.1f} ms")
        with Memory(hy_ws.root, config=local_config, embedder=sampled) as mem:
            search_hybrid = bench_search(mem, queries)
            vectors = bench_vectors(mem, query_vectors, TOP_K)
        search_hybrid["process_ms"] = first_search_in_a_new_process(
            hy_ws.root, queries[1], out / "samples.npy"
        )
        log(f"  hybrid search p50 {search_hybrid['p50']:.1f} ms")
        results.workspaces.append(
            {
                "files": n_files,
                "bytes": kw_ws.bytes,
                "keyword_build": kw_build,
                "hybrid_build": hy_build,
                "search_keyword": search_keyword,
                "search_hybrid": search_hybrid,
                "vectors": vectors,
                "keywords": keywords,
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
    block = render(results)
    estimate = estimate_100k(results)
    if estimate:
        block += "\n\n" + estimate
    print(block)
    if args.docs is not None:
        if write_docs(args.docs, block):
            log(f"report written into {args.docs}")
        else:
            log(f"{args.docs} has no scale.py markers: report not written there")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
