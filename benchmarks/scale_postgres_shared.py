"""Many workspaces in one PostgreSQL table (issue 37): per-workspace HNSW recall and search
latency with one HNSW index over every workspace (schemas 1–4) against one index per workspace
(schema 5), on the same rows in the same session.

    python benchmarks/scale_postgres_shared.py --url postgresql://… --source bench-9346

Run from the repository root after ``benchmarks/scale_postgres.py --sizes 100k`` has loaded its
generated 100k-chunk workspace (``--source``, through ``Memory.sync``) on the same server. This
script copies that workspace's rows into ``--workspaces - 1`` more workspaces (new ids; each
copy's vectors shifted by one random vector, σ 0.01 per dimension, re-normalised, as
``scale_postgres.replicate`` does), so the table holds ``--workspaces`` × ~100k chunks. Then,
for each layout of the HNSW index:

- ``global``: one index over every workspace's vectors (``WHERE dims = 512``), searched with
  the workspace filter and an iterative scan — what memdir did before schema 5;
- ``per-workspace``: one partial index per workspace (``WHERE workspace_id = '…' AND dims =
  512``, :func:`memdir.index.postgres.schema.ensure_workspace_index`) — what memdir does now;

it measures the build time and size of the indexes, recall@10 of ``nearest`` against the exact
top 10 in every workspace for ``--recall-queries`` real held-out questions (embedded with USE),
and the keyword, vector and hybrid legs on ``--latency-workspaces`` workspaces for
``--queries`` generated queries (the legs of ``scale_postgres.bench_legs``; the query model's
time excluded). Markdown to stdout, progress to stderr, everything to ``--json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

_HERE = Path(__file__).resolve().parent
for _path in (_HERE, _HERE.parent):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import scale  # noqa: E402
from _pg_scale_data import embed_cached, real_texts  # noqa: E402
from scale_postgres import PrecomputedQueries, bench_legs, db_bytes, index_env  # noqa: E402

DIMS = 512


def log(message: str) -> None:
    scale.log(message)


def copy_workspace(conn: Any, source: str, target: str, shift: np.ndarray) -> float:
    """Copy ``source``'s rows into ``target`` (the same hosts' copies) with every vector
    shifted by ``shift`` and re-normalised; returns the seconds it took."""
    from memdir.index.postgres.store import workspace_lock_key

    started = time.perf_counter()
    # Schema 5 keeps each host's copy (memdir_copies, memdir_holders); schemas 1-4 the
    # (mtime, size) each host saw (memdir_file_seen): run by today's memdir or an older one.
    copies = conn.execute("SELECT to_regclass('memdir_copies')").fetchone()[0] is not None
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (workspace_lock_key(target),))
        for table in ("memdir_chunks", "memdir_files", "memdir_terms", "memdir_meta"):
            conn.execute(f"DELETE FROM {table} WHERE workspace_id = %s", (target,))
        conn.execute(
            "INSERT INTO memdir_workspaces(workspace_id) VALUES (%s) ON CONFLICT DO NOTHING",
            (target,),
        )
        conn.execute(
            "INSERT INTO memdir_meta SELECT %s, key, value FROM memdir_meta "
            "WHERE workspace_id = %s",
            (target, source),
        )
        conn.execute(
            "INSERT INTO memdir_files SELECT %s, path, source, hash, mtime_ns, size, indexed_at, "
            "warning FROM memdir_files WHERE workspace_id = %s",
            (target, source),
        )
        if copies:
            conn.execute(
                "INSERT INTO memdir_copies SELECT %s, host, path, hash, mtime_ns, size, "
                "indexed_at FROM memdir_copies WHERE workspace_id = %s",
                (target, source),
            )
        else:
            conn.execute(
                "INSERT INTO memdir_file_seen SELECT %s, host, path, mtime_ns, size "
                "FROM memdir_file_seen WHERE workspace_id = %s",
                (target, source),
            )
        conn.execute(
            "INSERT INTO memdir_terms SELECT %s, term, df FROM memdir_terms "
            "WHERE workspace_id = %s",
            (target, source),
        )
        conn.execute(
            "INSERT INTO memdir_chunks(workspace_id, id, path, source, start_line, end_line, "
            "hash, model, text, tokens, embeddable, token_count, updated_at) "
            "SELECT %s, id, path, source, start_line, end_line, hash, model, text, tokens, "
            "embeddable, token_count, seq FROM memdir_chunks WHERE workspace_id = %s ORDER BY seq",
            (target, source),
        )
        if copies:
            conn.execute(
                "INSERT INTO memdir_holders SELECT c.workspace_id, h.host, h.path, c.seq "
                "FROM memdir_chunks c JOIN memdir_holders h ON h.seq = c.updated_at::bigint "
                "WHERE c.workspace_id = %s",
                (target,),
            )
        conn.execute(
            "UPDATE memdir_workspaces w SET generation = s.generation + 1, "
            "chunk_count = s.chunk_count, token_total = s.token_total FROM memdir_workspaces s "
            "WHERE w.workspace_id = %s AND s.workspace_id = %s",
            (target, source),
        )
        conn.execute(
            "INSERT INTO memdir_vectors(seq, workspace_id, dims, embedding) "
            "SELECT c.seq, c.workspace_id, v.dims, l2_normalize(v.embedding + %s) "
            "FROM memdir_chunks c JOIN memdir_vectors v ON v.seq = c.updated_at::bigint "
            "WHERE c.workspace_id = %s",
            (shift, target),
        )
    return time.perf_counter() - started


def index_bytes(conn: Any, names: Sequence[str]) -> int:
    rows = conn.execute(
        "SELECT coalesce(sum(pg_relation_size(c.oid)), 0) FROM pg_class c "
        "WHERE c.relname = ANY(%s)",
        (list(names),),
    ).fetchone()
    return int(rows[0])


def build_global(conn: Any) -> tuple[float, list[str]]:
    conn.execute("SET maintenance_work_mem = '4GB'")
    started = time.perf_counter()
    conn.execute(
        f"CREATE INDEX IF NOT EXISTS memdir_vectors_hnsw_{DIMS} ON memdir_vectors "
        f"USING hnsw ((embedding::vector({DIMS})) vector_cosine_ops) WHERE dims = {DIMS}"
    )
    return time.perf_counter() - started, [f"memdir_vectors_hnsw_{DIMS}"]


def build_per_workspace(conn: Any, workspaces: Sequence[str]) -> tuple[float, list[str]]:
    from memdir.index.postgres.schema import ensure_workspace_index, workspace_index_name

    conn.execute("SET maintenance_work_mem = '1GB'")
    started = time.perf_counter()
    for ws in workspaces:
        lap = time.perf_counter()
        ensure_workspace_index(conn, ws, DIMS)
        log(f"  {ws}: own HNSW index in {time.perf_counter() - lap:.0f} s")
    return time.perf_counter() - started, [workspace_index_name(ws, DIMS) for ws in workspaces]


def drop_indexes(conn: Any, names: Sequence[str]) -> None:
    for name in names:
        conn.execute(f"DROP INDEX IF EXISTS {name}")


def exact_truth(
    url: str, workspaces: Sequence[str], qvecs: np.ndarray
) -> dict[str, list[set[int]]]:
    from memdir.index.postgres import PostgresStore

    truth: dict[str, list[set[int]]] = {}
    for ws in workspaces:
        store = PostgresStore.open(url, ws, "bench")
        truth[ws] = [{s for s, _ in store.nearest(q, 10, exact=True)} for q in qvecs]
        store.close()
        log(f"  exact top 10 of {ws}")
    return truth


def recall(url: str, truth: dict[str, list[set[int]]], qvecs: np.ndarray) -> dict[str, Any]:
    """recall@10 of memdir's vector search (``nearest`` with its defaults: the HNSW index
    there is, ef_search max(200, 2k), the exact fallback when it returns too few) per
    workspace."""
    from memdir.index.postgres import PostgresStore

    out: dict[str, Any] = {}
    for ws, expected in truth.items():
        store = PostgresStore.open(url, ws, "bench")
        laps, recalls = [], []
        for q, want in zip(qvecs, expected, strict=True):
            with scale.stopwatch() as lap:
                got = {s for s, _ in store.nearest(q, 10, exact=False)}
            laps.append(lap)
            recalls.append(len(want & got) / 10)
        out[ws] = {"recall": float(np.mean(recalls)), "min": float(np.min(recalls))}
        out[ws].update(scale.ms_stats(laps))
        store.close()
        log(f"  {ws}: recall@10 {out[ws]['recall']:.3f}, p50 {out[ws]['p50']:.1f} ms")
    return out


def latency(
    url: str,
    root: Path,
    embedder: Any,
    workspaces: Sequence[str],
    queries: list[str],
    qtable: dict[str, Any],
) -> dict[str, Any]:
    from memdir import Memory, load_config

    out: dict[str, Any] = {}
    for ws in workspaces:
        config = load_config(root, {"index": {"workspace_id": ws}})
        with index_env(url):
            mem = Memory(root, config=config, embedder=embedder)
        out[ws] = bench_legs(mem, queries, qtable)
        mem.close()
        legs = out[ws]
        log(
            f"  {ws}: keyword {legs['keyword']['p50']:.1f}, vector {legs['vector']['p50']:.1f}, "
            f"hybrid {legs['hybrid']['p50']:.1f} ms p50"
        )
    return out


def render(r: dict[str, Any]) -> str:
    lines = [
        f"## {len(r['workspaces'])} workspaces in one table ({r['chunks']:,} chunks)",
        "",
        f"- date: {r['date']}; command: `{r['command']}`; load average {r['load']:.1f}",
        "",
        "| HNSW index | build | index size | recall@10 mean (worst workspace; worst query) "
        "| vector p50 (recall queries) | keyword p50 / p95 | vector p50 / p95 | hybrid p50 / p95 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for arm in r["arms"]:
        rec = arm["recall"].values()
        means = [x["recall"] for x in rec]
        worst_q = min(x["min"] for x in rec)
        vec_p50 = float(np.median([x["p50"] for x in rec]))
        legs = list(arm["latency"].values())

        def leg(name: str, legs: list[Any] = legs) -> str:
            p50 = float(np.median([x[name]["p50"] for x in legs]))
            p95 = float(np.median([x[name]["p95"] for x in legs]))
            return f"{p50:.1f} / {p95:.1f}"

        lines.append(
            f"| {arm['name']} | {arm['build_s']:.0f} s | {arm['index_bytes'] / 2**20:.0f} MiB | "
            f"{np.mean(means):.3f} ({min(means):.3f}; {worst_q:.1f}) | {vec_p50:.1f} ms | "
            f"{leg('keyword')} | {leg('vector')} | {leg('hybrid')} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--source", required=True, help="the loaded 100k-chunk workspace id")
    parser.add_argument("--root", type=Path, required=True, help="its workspace folder")
    parser.add_argument("--workspaces", type=int, default=10)
    parser.add_argument("--recall-queries", type=int, default=200)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--latency-workspaces", type=int, default=2)
    parser.add_argument("--arms", default="global,per-workspace")
    parser.add_argument("--data", type=Path, default=_HERE.parent.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, required=True, help="cache of the query vectors")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    from memdir.embeddings.local import LocalEmbedder
    from memdir.index.postgres import connect

    conn = connect(args.url)  # migrates an older index to this memdir's schema
    real = LocalEmbedder("use")
    _, recall_queries = real_texts(args.data, 20_000, args.recall_queries, seed=7)
    qvecs = embed_cached(real, recall_queries, args.out, query=True)
    queries = scale.make_queries(args.queries, seed=3)
    qtable = dict(zip(queries, embed_cached(real, queries, args.out, query=True), strict=True))
    workspaces = [args.source] + [f"{args.source}-ws{i}" for i in range(1, args.workspaces)]
    embedder = PrecomputedQueries(real, qtable)
    # This host's copy of the source, read once more after the upgrade (schema 4 marks the
    # copies an older index recorded as unseen), so the copies below carry real file times.
    from memdir import Memory, load_config

    with index_env(args.url):
        config = load_config(args.root, {"index": {"workspace_id": args.source}})
        with Memory(args.root, config=config, embedder=embedder) as mem:
            log(f"source re-read after the upgrade: {mem.index.sync(embed=False)}")
    rng = np.random.default_rng(37)
    # No HNSW index while ~900k vectors are copied in (kept up to date row by row it would
    # take hours here); each arm builds its own below.
    drop_indexes(conn, [f"memdir_vectors_hnsw_{DIMS}"])
    for ws in workspaces[1:]:
        shift = (scale.NOISE_SIGMA * rng.standard_normal(DIMS)).astype(np.float32)
        have = conn.execute(
            "SELECT chunk_count FROM memdir_workspaces WHERE workspace_id = %s", (ws,)
        ).fetchone()
        if have is None or int(have[0]) == 0:
            seconds = copy_workspace(conn, args.source, ws, shift)
            log(f"copied {args.source} into {ws} in {seconds:.0f} s")
    conn.execute("VACUUM ANALYZE memdir_chunks")
    conn.execute("VACUUM ANALYZE memdir_vectors")
    chunks = int(conn.execute("SELECT count(*) FROM memdir_chunks").fetchone()[0])
    log(f"{chunks:,} chunks in the table; exact top 10 per workspace")
    truth = exact_truth(args.url, workspaces, qvecs)
    results: dict[str, Any] = {
        "date": dt.date.today().isoformat(),
        "command": scale.command_line(),
        "machine": scale.machine_info(),
        "chunks": chunks,
        "workspaces": workspaces,
        "db_bytes": db_bytes(conn),
        "arms": [],
    }
    for arm in args.arms.split(","):
        log(f"arm {arm}: building")
        if arm == "global":
            build_s, names = build_global(conn)
        else:
            build_s, names = build_per_workspace(conn, workspaces)
        log(f"  built in {build_s:.0f} s")
        conn.execute("ANALYZE memdir_vectors")
        entry = {
            "name": arm,
            "build_s": build_s,
            "index_bytes": index_bytes(conn, names),
            "recall": recall(args.url, truth, qvecs),
            "latency": latency(
                args.url,
                args.root,
                embedder,
                workspaces[: args.latency_workspaces],
                queries,
                qtable,
            ),
        }
        results["arms"].append(entry)
        drop_indexes(conn, names)
        if args.json:
            args.json.write_text(json.dumps(results, indent=2, default=str), encoding="utf-8")
    results["load"] = float(np.mean(scale.LOADS)) if scale.LOADS else 0.0
    print(render(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
