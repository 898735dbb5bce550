"""Helpers of ``benchmarks/scale_postgres.py``: the real texts and their (cached) embeddings,
and the HNSW-versus-exact recall measurement. ``scale_postgres.py`` re-exports these names."""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import scale

EF_SWEEP = (40, 64, 100, 400)


def log(message: str) -> None:
    scale.log(message)


# -- real texts and their embeddings ----------------------------------------------------------


def real_texts(data: Path, n_docs: int, n_queries: int, seed: int) -> tuple[list[str], list[str]]:
    """Distinct real documents and held-out real questions from the shared data sets."""
    docs: list[str] = []
    queries: list[str] = []
    locomo = json.loads((data / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    for sample in locomo:
        for key, value in sample["conversation"].items():
            if key.startswith("session_") and isinstance(value, list):
                docs += [turn["text"] for turn in value]
        queries += [qa["question"] for qa in sample["qa"]]
    cmrc = json.loads((data / "cmrc2018" / "cmrc2018_dev.json").read_text(encoding="utf-8"))
    for article in cmrc["data"]:
        for paragraph in article["paragraphs"]:
            docs += [s + "。" for s in re.split(r"[。！？]", paragraph["context"]) if len(s) > 8]
            queries += [qa["question"] for qa in paragraph["qas"]]
    for lang in ("en", "cn"):
        bank = json.loads((data / "memorybank" / f"memory_bank_{lang}.json").read_text("utf-8"))
        for user in bank.values():
            for exchanges in user["history"].values():
                for ex in exchanges:
                    docs += [ex["query"], ex["response"]]
    docs = [d.strip() for d in dict.fromkeys(docs) if len(d.strip()) >= 10]
    queries = [q.strip() for q in dict.fromkeys(queries) if q.strip() not in set(docs)]
    rng = random.Random(seed)
    rng.shuffle(docs)
    rng.shuffle(queries)
    return docs[:n_docs], queries[:n_queries]


def embed_cached(embedder: Any, texts: Sequence[str], cache: Path, *, query: bool) -> np.ndarray:
    """Embed ``texts`` (documents or queries), reusing ``cache`` when it holds these texts."""
    key = hashlib.sha256(("\x00".join(texts) + embedder.model_id).encode()).hexdigest()[:16]
    path = cache / f"vectors-{'q' if query else 'd'}-{len(texts)}-{key}.npy"
    if path.is_file():
        return np.load(path)
    out = []
    started = time.perf_counter()
    for start in range(0, len(texts), 256):
        batch = list(texts[start : start + 256])
        if query:
            out += [np.asarray(embedder.embed_query(t), dtype=np.float32) for t in batch]
        else:
            out += list(np.asarray(embedder.embed_documents(batch), dtype=np.float32))
        rate = len(out) / (time.perf_counter() - started)
        log(f"embedded {len(out)}/{len(texts)} {'queries' if query else 'texts'} ({rate:.0f}/s)")
    vectors = np.stack(out)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


# -- 1. recall ----------------------------------------------------------------------------------


def bench_recall(
    url: str, docs: list[str], vectors: np.ndarray, qvecs: np.ndarray
) -> dict[str, Any]:
    """Load the real vectors through ``replace_file`` and compare HNSW with exact top 10."""
    from memdir.index.base import NewChunk
    from memdir.index.postgres import PostgresStore
    from memdir.index.postgres.schema import ensure_workspace_index
    from memdir.text import index_text

    store = PostgresStore.open(url, f"bench-recall-{len(docs)}", "bench")
    store.drop_workspace()
    store = PostgresStore.open(url, f"bench-recall-{len(docs)}", "bench")
    # The workspace's own HNSW index, made while it is empty so that it is kept up to date as
    # the rows arrive, as in use (memdir builds it once a workspace passes 20,000 vectors).
    ensure_workspace_index(store.conn, store.workspace_id, int(vectors.shape[1]))
    per_file = 500
    with scale.stopwatch() as load:
        for start in range(0, len(docs), per_file):
            chunks = [
                NewChunk(
                    id=hashlib.sha256(f"{start + i}:{text}".encode()).hexdigest(),
                    start_line=i + 1,
                    end_line=i + 1,
                    hash=hashlib.sha256(text.encode()).hexdigest(),
                    text=text,
                    tokens=index_text(text),
                    embedding=vectors[start + i],
                )
                for i, text in enumerate(docs[start : start + per_file])
            ]
            store.replace_file(
                path=f"recall/{start // per_file}.md",
                source="memory",
                hash=str(start),
                mtime_ns=0,
                size=0,
                warning=None,
                model="use",
                chunks=chunks,
            )
    exact_laps = []
    truth = []
    for q in qvecs:
        with scale.stopwatch() as lap:
            truth.append({s for s, _ in store.nearest(q, 10, exact=True)})
        exact_laps.append(lap)
    sweep = {}
    for ef in (*EF_SWEEP, None):  # None: memdir's default, max(EF_SEARCH_MIN, 2k)
        laps, recalls = [], []
        for q, expected in zip(qvecs, truth, strict=True):
            with scale.stopwatch() as lap:
                ann = store.nearest(q, 10, exact=False, ef_search=ef)
            laps.append(lap)
            recalls.append(len(expected & {s for s, _ in ann}) / 10)
        sweep[str(ef or "default")] = {
            "recall": float(np.mean(recalls)),
            "min": float(np.min(recalls)),
            **scale.ms_stats(laps),
        }
    store.drop_workspace()
    store.close()
    return {
        "docs": len(docs),
        "queries": len(qvecs),
        "load_s": load.wall,
        "exact": scale.ms_stats(exact_laps),
        "sweep": sweep,
    }
