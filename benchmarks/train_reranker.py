"""Train the ``learned`` reranker's weights (``src/memdir/rerank/learned.json``) on LoCoMo dev.

    python benchmarks/train_reranker.py --data ../shared/data/locomo/locomo10.json   # LOCO + fit
    python benchmarks/train_reranker.py --data ... --write src/memdir/rerank/learned.json

Training data: the **dev split only** (conversations 0–4), never the test split. Every question
of those conversations with evidence is used to fit, the adversarial category 5 included (its
questions have a false premise but point at real evidence turns); held-out scores are reported
on categories 1–4 as in ``locomo.py``.

1. Each dev conversation is indexed with memdir's defaults (cached under ``--cache``, shared
   with ``locomo.py``) and every question searched through ``Memory.search`` with a recording
   reranker: it keeps each passage's features (``memdir.rerank.base.FEATURES``; the rerank
   stage sees the best ``--top-n`` fused candidates placed as distinct passages) and leaves
   the fused order. A passage is positive when it shows an evidence turn. ``--rows FILE``
   keeps these rows (JSON) and reads them back on the next run, to try other features or
   penalties without searching again.
2. A logistic regression (standardised features, L2 penalty ``--l2``, Newton steps; no
   randomness except the bootstrap order, seeded by ``--seed``) is fitted
   leave-one-conversation-out: each conversation is searched with the model fitted on the
   other four, giving held-out seen@6. The same is reported for the fused order with and
   without line scoring (snippets centred on the best line), for comparison.
3. The final model is fitted on all five conversations; ``--write PATH`` saves it with how it
   was made (features, data, seed, held-out numbers).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
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
import configs as bench_configs  # noqa: E402
import locomo  # noqa: E402

DEV = range(5)


class Recorder:
    """A reranker that records features and keeps the fused order (scores fall with rank)."""

    name = "recorder"
    remote = False

    def __init__(self) -> None:
        self.last: list[Any] = []

    def rerank(self, query: str, docs: Sequence[Any]) -> list[float]:
        self.last.append((query, list(docs)))
        return [-float(i) for i in range(len(docs))]


def fit_logistic(x: np.ndarray, y: np.ndarray, *, l2: float, steps: int = 50) -> np.ndarray:
    """Weights ``[intercept, coef...]`` of an L2-penalised logistic regression (Newton)."""
    xb = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(xb.shape[1])
    penalty = np.full(xb.shape[1], l2)
    penalty[0] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ w, -50, 50)))
        grad = xb.T @ (p - y) + penalty * w
        hess = (xb * (p * (1 - p))[:, None]).T @ xb + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return w


def to_model(rows: list[tuple[dict[str, float], int]], features: Sequence[str], l2: float) -> Any:
    from memdir.rerank.learned import LogisticModel

    x = np.array([[f[name] for name in features] for f, _ in rows], dtype=np.float64)
    y = np.array([label for _, label in rows], dtype=np.float64)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    w = fit_logistic((x - mean) / scale, y, l2=l2)
    return LogisticModel(
        tuple(features),
        tuple(float(v) for v in mean),
        tuple(float(v) for v in scale),
        tuple(float(v) for v in w[1:]),
        float(w[0]),
        {},
    )


def load_dev(path: Path, picked: Sequence[int]) -> list[dict[str, Any]]:
    """Per dev conversation: files, evidence positions, training and evaluation questions."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for i in picked:
        if i not in DEV:
            raise SystemExit(f"conversation {i} is not in the dev split (0-4)")
        sample = data[i]
        sessions = locomo.load_sessions(sample["conversation"])
        known = {dia_id for s in sessions for dia_id, _ in s.turns}
        files, where = locomo.build_layout(sessions, "sessions")
        stats: Any = __import__("collections").Counter()
        train = []
        for item in sample["qa"]:
            evidence = locomo.normalise_evidence(list(item.get("evidence") or []), known, stats)
            if evidence:
                train.append(
                    locomo.Question(str(item["question"]), int(item["category"]), evidence)
                )
        evaluate = [q for q in train if q.category in locomo.CATEGORIES]
        out.append(
            {
                "id": str(sample["sample_id"]),
                "files": files,
                "where": where,
                "train": train,
                "evaluate": evaluate,
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="locomo10.json")
    parser.add_argument("--cache", type=Path, default=common.DEFAULT_CACHE)
    parser.add_argument("--l2", type=float, default=1.0, help="L2 penalty of the fit")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument(
        "--features",
        default="",
        help="comma-separated subset of FEATURES; several sets separated by ';' are all "
        "compared held out, and the first is fitted as the final model",
    )
    parser.add_argument("--top-n", type=int, default=24, help="candidates reranked")
    parser.add_argument("--multiplier", type=int, default=4, help="search.candidate_multiplier")
    parser.add_argument("--write", type=Path, default=None, help="save the final model here")
    parser.add_argument(
        "--conversations", default="0,1,2,3,4", help="dev conversations to use (quick runs)"
    )
    parser.add_argument("--rows", type=Path, default=None, help="cache of the recorded rows")
    parser.add_argument(
        "--skip-held-out", action="store_true", help="fit and write only (no held-out runs)"
    )
    args = parser.parse_args(argv)

    from memdir import Memory, load_config
    from memdir.rerank.base import FEATURES
    from memdir.rerank.learned import LearnedReranker

    feature_sets = [
        [f for f in part.split(",") if f] for part in args.features.split(";") if part.strip()
    ] or [list(FEATURES)]
    features = feature_sets[0]  # the final model's
    np.random.default_rng(args.seed)  # the fit is deterministic; the seed is recorded
    convs = load_dev(args.data, [int(c) for c in args.conversations.split(",")])
    runner = _runner.Runner(args.cache, fresh=False, embedder_kind="local", reuse_queries=True)
    bench = bench_configs.CONFIGS["default"]
    embedder = bench_configs.make_embedder(bench, "local", reuse_queries=True)
    overrides = {
        "search": {"split_queries": "off", "candidate_multiplier": args.multiplier},
        "rerank": {"top_n": args.top_n},
    }
    config = load_config(None, overrides=overrides)
    roots = []
    with common.env("MEMDIR_HOME", str(args.cache / "home")):
        for conv in convs:
            corpus = common.Corpus(
                f"locomo/sessions/{conv['id']}",
                conv["files"],
                [],
                seed_glob=f"locomo/*/{conv['id']}",
            )
            root, build = runner._prepare(corpus, config, embedder)
            common.log(f"{conv['id']}: index {'cached' if build['cached'] else 'built'}")
            roots.append(root)

        def search_all(conv_index: int, questions: Any, reranker: Any, cfg: Any) -> list[Any]:
            with Memory(roots[conv_index], config=cfg, embedder=embedder, reranker=reranker) as m:
                return [m.search(q.text) for q in questions]

        # 1. features and labels
        rows: list[list[tuple[dict[str, float], int]]] = []
        cached = json.loads(args.rows.read_text()) if args.rows and args.rows.is_file() else {}
        for ci, conv in enumerate(convs):
            if conv["id"] in cached:
                rows.append([(f, int(label)) for f, label in cached[conv["id"]]])
                continue
            recorder = Recorder()
            responses = search_all(ci, conv["train"], recorder, config)
            conv_rows = []
            for q, (_, docs) in zip(conv["train"], recorder.last, strict=True):
                for doc in docs:
                    label = int(any(f"[{e}]" in doc.text for e in q.evidence))
                    conv_rows.append((dict(doc.features), label))
            del responses
            rows.append(conv_rows)
            cached[conv["id"]] = conv_rows
            positives = sum(label for _, label in conv_rows)
            common.log(f"{conv['id']}: {len(conv_rows)} passages, {positives} positive")
        if args.rows:
            args.rows.write_text(json.dumps(cached), encoding="utf-8")

        def seen6(conv_index: int, reranker: Any, cfg: Any) -> list[float]:
            conv = convs[conv_index]
            responses = search_all(conv_index, conv["evaluate"], reranker, cfg)
            out = []
            for q, r in zip(conv["evaluate"], responses, strict=True):
                hits = [
                    common.Hit(h.path, h.start_line, h.end_line, h.snippet, h.score)
                    for h in r.results
                ]
                out.append(locomo.question_metrics(q, hits, conv["where"])["seen@6"])
            return out

        # 2. leave one conversation out
        none_cfg = load_config(None, overrides={**overrides, "rerank": {"provider": "none"}})
        results: dict[str, list[float]] = {"fused order (no reranker)": []}
        for ci in range(0 if args.skip_held_out else len(convs)):
            results["fused order (no reranker)"] += seen6(ci, None, none_cfg)
            for feature_set in feature_sets:
                train_rows = [r for cj, conv_rows in enumerate(rows) if cj != ci for r in conv_rows]
                model = to_model(train_rows, feature_set, args.l2)
                name = f"learned, held out: {','.join(feature_set)}"
                results.setdefault(name, []).extend(seen6(ci, LearnedReranker(model), config))
            common.log(
                f"held out {convs[ci]['id']}: "
                + "; ".join(f"{k} {np.mean(v):.3f}" for k, v in results.items())
            )
        summary = {k: round(float(np.mean(v)), 4) for k, v in results.items() if v}
        print(json.dumps(summary, indent=1))

        # 3. final fit
        final = to_model([r for conv_rows in rows for r in conv_rows], features, args.l2)
        trained = {
            "script": "benchmarks/train_reranker.py",
            "data": "LoCoMo dev split (conversations 0-4), all questions with evidence",
            "date": dt.date.today().isoformat(),
            "seed": args.seed,
            "l2": args.l2,
            "top_n": args.top_n,
            "candidate_multiplier": args.multiplier,
            "candidates": sum(len(r) for r in rows),
            "held_out_seen@6": summary,
        }
        from memdir.rerank.learned import LogisticModel

        final = LogisticModel(
            final.features, final.mean, final.scale, final.coef, final.intercept, trained
        )
        for name, w in zip(final.features, final.coef, strict=True):
            common.log(f"  {name:>14} {w:+.3f}")
        if args.write:
            args.write.write_text(json.dumps(final.to_dict(), indent=1) + "\n", encoding="utf-8")
            common.log(f"wrote {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
