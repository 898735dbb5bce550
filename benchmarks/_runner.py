"""Running the retrieval benchmarks' configurations (``locomo.py``, ``cmrc.py`` and the
scripts built on them): :class:`Runner` indexes a list of corpora once per distinct index
(cached under ``--cache``) and runs every configuration of :mod:`configs` on them, returning
the raw hits and latencies; :func:`run_configs` runs them all, :func:`build_only` only builds.
memdir is imported inside the functions, so that ``--help`` starts at once.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _common import (
    MARKER,
    ConfigRun,
    Corpus,
    Hit,
    content_hash,
    env,
    fresh_workspace,
    log,
    read_marker,
    write_files,
)


def run_configs(
    runner: Runner,
    corpora: Sequence[Corpus],
    configs: Sequence[Any],
    early: Callable[[ConfigRun], str],
) -> tuple[dict[str, ConfigRun], dict[str, float]]:
    """Run each configuration on ``corpora``: the runs and their seconds, by name. ``early``
    gives a one-line summary logged as soon as a configuration is done (so that a later
    failure does not hide earlier numbers)."""
    runs: dict[str, ConfigRun] = {}
    seconds: dict[str, float] = {}
    for config in configs:
        log(f"[{config.name}] {config.about}")
        start = time.perf_counter()
        run = runs[config.name] = runner.run(corpora, config)
        seconds[config.name] = round(time.perf_counter() - start, 1)
        log(f"[{config.name}] done in {seconds[config.name]} s")
        if not run.error:
            log(f"[{config.name}] {early(run)}")
    return runs, seconds


def builds_note(builds: Sequence[dict[str, Any]]) -> str:
    """How a run's indexes came to be, for the report."""
    fresh = [b for b in builds if b.get("fresh_search")]
    if fresh:
        vectors = sum(b["vectors"] for b in fresh)
        chunks = sum(b["chunks"] for b in fresh)
        memo = [b["memo"] for b in fresh if "memo" in b]
        reused = sum(m["from_cache"] for m in memo)
        note = (
            f"; {reused} of the vectors the searches computed were taken from the cached "
            "index's embedding cache (the same model: the same vectors; latencies leave the "
            "model out)"
            if reused
            else ""
        )
        return (
            f"searched straight after copying the files in, no `memdir index` ({len(fresh)} "
            f"workspaces; {vectors} of {chunks} chunks had vectors after the searches{note})"
        )
    built = [b for b in builds if not b["cached"]]
    chunks = sum(b["chunks"] or 0 for b in builds)
    return (
        f"{len(built)} of {len(builds)} indexes built now "
        f"({sum(b['sync_s'] for b in built):.1f} s), the rest cached; {chunks} chunks"
    )


def build_only(runner: Runner, corpora: Sequence[Corpus], configs: Sequence[Any]) -> int:
    """``--build-only``: prepare every memdir configuration's indexes and print what was built."""
    import configs as bench_configs
    from memdir import load_config

    for bench in configs:
        if bench.engine != "memdir":
            continue
        config = load_config(None, overrides=bench.overrides)
        embedder = bench_configs.make_embedder(bench, runner.embedder_kind)
        with (
            tempfile.TemporaryDirectory(prefix="memdir-bench-home-") as home,
            env("MEMDIR_HOME", home),
        ):
            for corpus in corpora:
                _, build = runner._prepare(corpus, config, embedder)
                how = "cached" if build["cached"] else f"built in {build['sync_s']:.1f} s"
                log(f"[{bench.name}] {corpus.key} {build['index']}: {how}")
    return 0


def runs_summary(runs: dict[str, ConfigRun], seconds: dict[str, float]) -> dict[str, Any]:
    """Per configuration, for the JSON report: seconds, error, rescues and index builds."""
    return {
        name: {"seconds": seconds[name], "error": r.error, "rescued": r.rescued, "builds": r.builds}
        for name, r in runs.items()
    }


class Runner:
    """Runs configurations over corpora, building each distinct index once."""

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Runner:
        """The runner of the options :func:`add_common_args` added."""
        return cls(
            args.cache,
            fresh=args.fresh,
            embedder_kind=args.embedder,
            reuse_queries=args.reuse_query_vectors,
            fresh_search=getattr(args, "fresh_search", False),
        )

    def __init__(
        self,
        cache: Path,
        *,
        fresh: bool,
        embedder_kind: str,
        reuse_queries: bool = False,
        fresh_search: bool = False,
    ) -> None:
        self.cache = cache.expanduser()
        self.fresh = fresh
        self.embedder_kind = embedder_kind
        self.reuse_queries = reuse_queries
        self.fresh_search = fresh_search
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
        from memdir import load_config

        run = ConfigRun(bench.name)
        config = load_config(None, overrides=bench.overrides)
        embedder = bench_configs.make_embedder(
            bench, self.embedder_kind, reuse_queries=self.reuse_queries
        )
        for corpus in corpora:
            with contextlib.ExitStack() as stack:
                searcher = embedder
                if self.fresh_search:
                    folder = stack.enter_context(
                        tempfile.TemporaryDirectory(prefix="memdir-bench-fresh-")
                    )
                    root = Path(folder) / "ws"
                    write_files(root, corpus.files)
                    build: dict[str, Any] = {"corpus": corpus.key, "fresh_search": True}
                    if embedder is not None:
                        known = self._cached_vectors(corpus, config, embedder)
                        searcher = DocumentMemo(embedder, known)
                        build["memo"] = searcher.stats
                else:
                    root, build = self._prepare(corpus, config, embedder)
                run.builds.append(build)
                hits, latencies = self._search_all(root, corpus, config, searcher, run, build)
            run.hits.append(hits)
            run.latencies_ms.append(latencies)
            if self.fresh_search:
                how = f"searched fresh ({build['vectors']} of {build['chunks']} chunks embedded)"
            else:
                how = "cached" if build["cached"] else f"built in {build['sync_s']:.1f} s"
            took = sum(latencies) / 1000
            log(f"  {corpus.key}: index {how}, {len(hits)} queries in {took:.1f} s")
        return run

    def _search_all(
        self,
        root: Path,
        corpus: Corpus,
        config: Any,
        embedder: Any,
        run: ConfigRun,
        build: dict[str, Any],
    ) -> tuple[list[list[Hit]], list[float]]:
        """Every query of ``corpus`` through ``Memory.search``. Fresh searches start at once
        (the first one pays for opening the model and indexing the files); otherwise a warm-up
        search comes first."""
        from memdir import Memory

        hits: list[list[Hit]] = []
        latencies: list[float] = []
        with env("MEMDIR_NOW", corpus.now), Memory(root, config=config, embedder=embedder) as mem:
            if corpus.queries and not self.fresh_search:
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
            if self.fresh_search:
                counts = mem.index.counts()
                build.update(chunks=counts["chunks"], vectors=counts["vectors"])
        return hits, latencies

    def _cached_root(self, corpus: Corpus, config: Any, embedder: Any) -> tuple[Path, str, str]:
        """Where (corpus, index identity) is cached: ``(root, identity, embedder id)``."""
        emb_id = f"{embedder.provider}-{embedder.model_id}" if embedder is not None else "none"
        ident = (
            f"{emb_id}__{config.index.keyword_tokenizer}"
            f"__c{config.chunking.tokens}o{config.chunking.overlap}"
            f"{'' if config.chunking.pooling == 'chunk' else 'p' + config.chunking.pooling}"
            f"{'' if config.chunking.line_vectors else '-nolines'}"
        )
        return self.cache / corpus.key / ident, ident, emb_id

    def _cached_vectors(self, corpus: Corpus, config: Any, embedder: Any) -> dict[str, bytes]:
        """The embedding cache of the corpus's cached index (text hash → float32 bytes), for a
        fresh search to take the model's answers from instead of running it again: the same
        model gives the same vectors, so quality is exact (latencies then leave it out)."""
        root, _, _ = self._cached_root(corpus, config, embedder)
        index = root / ".memdir" / "index.sqlite"
        if config.chunking.pooling != "chunk" or not index.is_file():
            return {}
        import numpy as np

        from memdir.index.sqlite.codec import decode
        from memdir.index.sqlite.schema import hash_text

        out: dict[str, bytes] = {}
        with contextlib.closing(sqlite3.connect(f"file:{index}?mode=ro", uri=True)) as conn:
            models = conn.execute(
                "SELECT id, dims, centre FROM embedding_models WHERE provider = ? AND model = ?",
                (embedder.provider, embedder.model_id),
            ).fetchall()
            for model, dims, centre in models:
                rows = conn.execute(
                    "SELECT hash, vector FROM embeddings WHERE model = ?", (model,)
                ).fetchall()
                mean = None if centre is None else np.frombuffer(centre, dtype=np.float32)
                vectors = decode([bytes(r[1]) for r in rows], int(dims), mean)
                for (key, _), vec in zip(rows, vectors, strict=True):
                    out[hash_text(bytes(key))] = vec.astype(np.float32).tobytes()
        return out

    def _prepare(self, corpus: Corpus, config: Any, embedder: Any) -> tuple[Path, dict[str, Any]]:
        """The cached workspace of (corpus, index identity), built or synced now."""
        from memdir import Memory

        root, ident, emb_id = self._cached_root(corpus, config, embedder)
        reuse = not self.fresh or root in self.built_now
        written = fresh_workspace(root, corpus.files, reuse)
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
        marker = read_marker(root) or {}
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
        siblings = sorted(self.cache.glob(f"{pattern}/{emb_id}__*"))
        # The same index in another layout first: it holds exactly these chunk texts' vectors.
        siblings.sort(key=lambda other: other.name != root.name)
        for other in siblings:
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

    def _run_memsearch(self, corpora: Sequence[Corpus], bench: Any) -> ConfigRun:
        import _memsearch

        return _memsearch.run_memsearch(self, corpora, bench)


class DocumentMemo:
    """An embedder whose document vectors come from ``known`` (text hash → float32 bytes) when
    it has them, the wrapped model otherwise; queries always go to the model."""

    def __init__(self, inner: Any, known: dict[str, bytes]) -> None:
        self._inner = inner
        self._known = known
        self.stats = {"known": len(known), "from_cache": 0, "embedded": 0}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def embed_query(self, text: str) -> Any:
        return self._inner.embed_query(text)

    def embed_documents(self, texts: Sequence[str]) -> Any:
        import numpy as np

        from memdir.markdown.chunking import text_hash

        keys = [text_hash(t) for t in texts]
        missing = [i for i, k in enumerate(keys) if k not in self._known]
        fresh = self._inner.embed_documents([texts[i] for i in missing]) if missing else []
        out = np.zeros((len(texts), self._inner.dims), dtype=np.float32)
        for j, i in enumerate(missing):
            out[i] = fresh[j]
        for i, key in enumerate(keys):
            if key in self._known:
                out[i] = np.frombuffer(self._known[key], dtype=np.float32)
        self.stats["from_cache"] += len(texts) - len(missing)
        self.stats["embedded"] += len(missing)
        return out
