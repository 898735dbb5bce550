"""LoCoMo retrieval: does ``Memory.search(question)`` return the dialogue turns that answer it?

    python benchmarks/locomo.py --data /work/shared/data/locomo/locomo10.json   # dev, both layouts
    python benchmarks/locomo.py --data ... --split test --layout daily --configs default,keyword
    python benchmarks/locomo.py --data ... --embedder fake --configs default   # smoke run

For each conversation of the split (dev = conversations 0–4, test = 5–9, or all) a workspace is
written with one line per turn, ``[D<s>:<t>] <speaker>: <text>`` (plus
`` [shares a photo: <caption>]``), under one of two layouts:

- ``sessions``: ``memory/<YYYY-MM-DD>-session-<n>.md`` per session (evergreen: no decay);
- ``daily``: daily logs ``memory/YYYY-MM-DD.md`` (the sessions of one day in one file), so
  temporal decay applies, with ``MEMDIR_NOW`` = the day after the conversation's last session.

Each file or session starts with ``# <session date time>``. event_summary, observation and
session_summary are not indexed. Every question of categories 1–4 is searched with the default
max_results (6). Per question, over its evidence turns:

- **seen@k**: share of evidence turns whose tag ``[D<s>:<t>]`` is inside a returned snippet
  (the text an agent actually reads), among the first k results;
- **located@k**: share whose line lies inside a returned ``start_line..end_line`` of its file;
- **all-found@6**: share of questions with every evidence turn seen in the 6 results.

Evidence ids are normalised ("D:11:26" → D11:26, "D30:05" → D30:5, "D8:6; D9:17" → two ids);
malformed ids and ids absent from the conversation are skipped and counted. Configurations come
from ``configs.py``; built indexes are cached under ``--cache`` (``--fresh`` rebuilds them).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

import _common as common  # noqa: E402
import _runner  # noqa: E402
import configs as bench_configs  # noqa: E402

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
SPLITS = {"dev": range(5), "test": range(5, 10)}
LAYOUTS = ("sessions", "daily")
KS = (1, 3, 6)
DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"
_DATE_RE = re.compile(r"(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})")
_ID_RE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_SESSION_RE = re.compile(r"session_(\d+)")


@dataclass
class Session:
    number: int
    date_time: str
    day: dt.date
    turns: list[tuple[str, str]]  # (dia_id, line)


@dataclass
class Question:
    text: str
    category: int
    evidence: list[str]


def parse_day(date_time: str) -> dt.date:
    """The date of ``"1:56 pm on 8 May, 2023"``.

    Raises:
        ValueError: no date can be read.
    """
    try:
        return dt.datetime.strptime(date_time.strip(), DATE_FORMAT).date()
    except ValueError:
        match = _DATE_RE.search(date_time)
        if not match:
            raise
        return dt.datetime.strptime(" ".join(match.groups()), "%d %B %Y").date()


def turn_line(turn: dict[str, Any]) -> str:
    text = " ".join(str(turn.get("text", "")).split())
    line = f"[{turn['dia_id']}] {turn['speaker']}: {text}"
    caption = " ".join(str(turn.get("blip_caption") or "").split())
    return f"{line} [shares a photo: {caption}]" if caption else line


def load_sessions(conversation: dict[str, Any]) -> list[Session]:
    """The non-empty sessions, in session order (date-time keys without turns are ignored)."""
    sessions = []
    numbers = sorted(int(m.group(1)) for k in conversation if (m := _SESSION_RE.fullmatch(k)))
    for n in numbers:
        turns = conversation[f"session_{n}"]
        if not turns:
            continue
        date_time = conversation[f"session_{n}_date_time"]
        lines = [(str(t["dia_id"]), turn_line(t)) for t in turns]
        sessions.append(Session(n, date_time, parse_day(date_time), lines))
    return sessions


def build_layout(
    sessions: list[Session], layout: str
) -> tuple[dict[str, str], dict[str, tuple[str, int]]]:
    """Files of the workspace and, per dia_id, its (path, 1-based line)."""
    groups: dict[str, list[Session]] = {}
    for s in sessions:
        name = f"memory/{s.day.isoformat()}"
        path = f"{name}-session-{s.number}.md" if layout == "sessions" else f"{name}.md"
        groups.setdefault(path, []).append(s)
    files: dict[str, str] = {}
    where: dict[str, tuple[str, int]] = {}
    for path, group in groups.items():
        lines: list[str] = []
        for s in group:
            if lines:
                lines.append("")
            lines.append(f"# {s.date_time}")
            for dia_id, line in s.turns:
                lines.append(line)
                where.setdefault(dia_id, (path, len(lines)))
        files[path] = "\n".join(lines) + "\n"
    return files, where


def normalise_evidence(raw: list[str], known: set[str], stats: Counter[str]) -> list[str]:
    """Canonical ``D<s>:<t>`` ids found in the conversation; the rest is counted in ``stats``."""
    out: list[str] = []
    for item in raw:
        stats["ids"] += 1
        found = _ID_RE.findall(str(item))
        if not found:
            stats["skipped_malformed"] += 1
            continue
        canonical = [f"D{int(s)}:{int(t)}" for s, t in found]
        if canonical != [str(item).strip()]:
            stats["normalised"] += 1
        for dia_id in canonical:
            if dia_id not in known:
                stats["skipped_absent"] += 1
            elif dia_id not in out:
                out.append(dia_id)
    return out


def load_questions(
    qa: list[dict[str, Any]], known: set[str], stats: Counter[str]
) -> list[Question]:
    out = []
    for item in qa:
        category = int(item.get("category", 0))
        if category not in CATEGORIES:
            continue
        evidence = normalise_evidence(list(item.get("evidence") or []), known, stats)
        if not evidence:
            stats["questions_without_evidence"] += 1
            continue
        out.append(Question(str(item["question"]), category, evidence))
    return out


def question_metrics(
    q: Question, hits: list[common.Hit], where: dict[str, tuple[str, int]]
) -> dict[str, float]:
    hits = hits[: max(KS)]
    m: dict[str, float] = {}
    n = len(q.evidence)
    for k in KS:
        top = hits[:k]
        seen = sum(any(f"[{e}]" in h.text for h in top) for e in q.evidence)
        located = sum(
            any(h.path == where[e][0] and h.start_line <= where[e][1] <= h.end_line for h in top)
            for e in q.evidence
        )
        m[f"seen@{k}"] = seen / n
        m[f"located@{k}"] = located / n
    m["all_seen@6"] = float(m["seen@6"] == 1.0)
    m["all_located@6"] = float(m["located@6"] == 1.0)
    m["chars"] = float(sum(len(h.text) for h in hits))
    return m


def aggregate(rows: list[tuple[Question, dict[str, float]]], latencies: list[float]) -> dict:
    keys = [k for k in rows[0][1] if k != "chars"] if rows else []
    out: dict[str, Any] = {"questions": len(rows)}
    for key in keys:
        out[key] = common.mean([m[key] for _, m in rows])
    out["chars_per_query"] = common.mean([m["chars"] for _, m in rows])
    out["p50_ms"] = common.percentile(latencies, 50)
    out["p95_ms"] = common.percentile(latencies, 95)
    out["by_category"] = {
        name: {
            "questions": sum(1 for q, _ in rows if q.category == c),
            "seen@6": common.mean([m["seen@6"] for q, m in rows if q.category == c]),
            "located@6": common.mean([m["located@6"] for q, m in rows if q.category == c]),
        }
        for c, name in CATEGORIES.items()
    }
    return out


def table(layout_results: dict[str, dict[str, Any]], counts: dict[str, int]) -> str:
    headers = ["config", "seen@1", "seen@3", "seen@6", "located@6", "all-found@6"]
    headers += ["chars/query", "p50 ms", "p95 ms"]
    headers += [f"{name} seen@6 (n={counts[name]})" for name in CATEGORIES.values()]
    rows = []
    for name, r in layout_results.items():
        if "error" in r:
            rows.append([name, *["n/a"] * (len(headers) - 1)])
            continue
        cells = [r["seen@1"], r["seen@3"], r["seen@6"], r["located@6"], r["all_seen@6"]]
        row = [name, *(common.fmt(x) for x in cells)]
        row += [common.fmt(round(r["chars_per_query"])), common.fmt(r["p50_ms"], 1)]
        row.append(common.fmt(r["p95_ms"], 1))
        row += [common.fmt(r["by_category"][c]["seen@6"]) for c in CATEGORIES.values()]
        rows.append(row)
    return common.md_table(headers, rows)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="LoCoMo retrieval benchmark for memdir (see the module docstring)."
    )
    parser.add_argument("--data", type=Path, required=True, help="locomo10.json")
    parser.add_argument("--split", choices=("dev", "test", "all"), default="dev")
    parser.add_argument("--layout", choices=(*LAYOUTS, "both"), default="both")
    common.add_common_args(parser, list(bench_configs.CONFIGS))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    data = json.loads(args.data.read_text(encoding="utf-8"))
    picked = SPLITS.get(args.split, range(len(data)))
    indices = [i for i in picked if i < len(data)]
    configs = bench_configs.select(args.configs)
    layouts = LAYOUTS if args.layout == "both" else (args.layout,)
    stats: Counter[str] = Counter()
    convs: list[tuple[str, list[Session], list[Question]]] = []
    for i in indices:
        sample = data[i]
        sessions = load_sessions(sample["conversation"])
        known = {dia_id for s in sessions for dia_id, _ in s.turns}
        convs.append(
            (str(sample["sample_id"]), sessions, load_questions(sample["qa"], known, stats))
        )
    ids = ", ".join(f"{i}:{c[0]}" for i, c in zip(indices, convs, strict=True))
    split_text = f"{args.split} (conversations {ids})"
    common.log(f"LoCoMo split {split_text}; layouts {', '.join(layouts)}")

    corpora, wheres = [], []
    for layout in layouts:
        for sid, sessions, questions in convs:
            files, where = build_layout(sessions, layout)
            now = (max(s.day for s in sessions) + dt.timedelta(days=1)).isoformat()
            corpora.append(
                common.Corpus(
                    f"locomo/{layout}/{sid}",
                    files,
                    [q.text for q in questions],
                    now=now,
                    seed_glob=f"locomo/*/{sid}",
                )
            )
            wheres.append(where)

    info = common.machine_info()
    uses_model = any(c.engine == "memdir" and c.embedder != "none" for c in configs)
    info["embedder"] = bench_configs.describe_embedder(args.embedder) if uses_model else "n/a"

    def early(run: common.ConfigRun) -> str:
        rows = [
            (q, question_metrics(q, hits, wheres[ci]))
            for ci, (_, _, questions) in enumerate(convs)
            for q, hits in zip(questions, run.hits[ci], strict=True)
        ]
        return f"seen@6 {common.fmt(common.mean([m['seen@6'] for _, m in rows]))} ({layouts[0]})"

    if args.build_only:
        return _runner.build_only(_runner.Runner.from_args(args), corpora, configs)
    runs, seconds = _runner.run_configs(_runner.Runner.from_args(args), corpora, configs, early)

    results: dict[str, dict[str, Any]] = {layout: {} for layout in layouts}
    for li, layout in enumerate(layouts):
        for config in configs:
            run = runs[config.name]
            if run.error:
                results[layout][config.name] = {"error": run.error}
                continue
            rows, latencies = [], []
            for ci, (_, _, questions) in enumerate(convs):
                idx = li * len(convs) + ci
                latencies += run.latencies_ms[idx]
                for q, hits in zip(questions, run.hits[idx], strict=True):
                    rows.append((q, question_metrics(q, hits, wheres[idx])))
            results[layout][config.name] = aggregate(rows, latencies)

    all_questions = [q for _, _, qs in convs for q in qs]
    counts = {
        name: sum(1 for q in all_questions if q.category == c) for c, name in CATEGORIES.items()
    }
    out = [common.report_header("LoCoMo retrieval (memory_search)", "locomo.py", argv, info)]
    out.append(f"- Split: {split_text}; {len(all_questions)} questions of categories 1–4")
    reuse = "; query vectors reused across configurations" if args.reuse_query_vectors else ""
    out.append(f"- Embedder (--embedder {args.embedder}): {info['embedder']}{reuse}")
    if args.fresh_search:
        out.append(
            "- --fresh-search: each workspace searched straight after its files were copied "
            "into a new folder (no `memdir index`; the searches index and embed what they do)"
        )
    out.append(
        f"- Evidence ids: {stats['ids']} read, {stats['normalised']} normalised, "
        f"{stats['skipped_malformed']} skipped as malformed, {stats['skipped_absent']} skipped "
        f"as absent from the conversation; {stats['questions_without_evidence']} questions left "
        "without evidence (excluded)"
    )
    for layout in layouts:
        decay = "daily logs, decay on (MEMDIR_NOW = day after the last session)"
        about = "one file per session (evergreen)" if layout == "sessions" else decay
        out += ["", f"### Layout `{layout}`: {about}", "", table(results[layout], counts)]
    out += ["", "Configurations:", ""]
    for config in configs:
        run = runs[config.name]
        if run.error:
            out.append(f"- `{config.name}`: **n/a**: {run.error}")
            continue
        out.append(
            f"- `{config.name}`: {config.about}. {_runner.builds_note(run.builds)}; run "
            f"{seconds[config.name]} s; min_score rescues {run.rescued}"
        )
    print("\n".join(out))
    common.write_json(
        args.json,
        {
            "benchmark": "locomo",
            "machine": info,
            "command": ["python", "benchmarks/locomo.py", *argv],
            "split": args.split,
            "conversations": [c[0] for c in convs],
            "layouts": list(layouts),
            "evidence": dict(stats),
            "results": results,
            "runs": _runner.runs_summary(runs, seconds),
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
