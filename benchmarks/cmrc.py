"""CMRC 2018 dev as a Chinese retrieval test: does a question retrieve its own paragraph?

    python benchmarks/cmrc.py --data /work/shared/data/cmrc2018/cmrc2018_dev.json   # all configs
    python benchmarks/cmrc.py --data ... --limit 100 --configs default,keyword       # quick run
    python benchmarks/cmrc.py --data ... --question-stride 4      # all notes, every 4th question
    python benchmarks/cmrc.py --data ... --embedder fake --limit 20                 # smoke run
    python benchmarks/cmrc.py --data ... --questions benchmarks/data/cmrc_paraphrase.jsonl

``--questions FILE`` replaces CMRC's own questions with others about the same paragraphs, one
JSON object a line, ``{"id": "<paragraph id>", "question": "…", "answer": "…"}``: the
paraphrase set ``benchmarks/data/cmrc_paraphrase.jsonl`` (44 questions written for memdir that
share few words with their paragraph; see ``benchmarks/README.md``).

Each of the 848 paragraphs becomes a topic note ``memory/<title>/<paragraph id>.md`` (the
article title, made safe for a folder name, or the id prefix when the title is empty) holding
``# <title>`` and the paragraph text; topic notes are evergreen (no decay). Each of the 3,219
questions is searched with the default max_results (6). A result is right when its path is the
question's note. Reported: recall@1, recall@6, MRR over the 6 results, characters returned per
query and p50/p95 search latency, plus **answer@6**: the share of questions with one of their
gold answer strings inside the returned snippets (what an agent actually reads).
Configurations come from ``configs.py``; built indexes are cached under ``--cache``
(``--fresh`` rebuilds them).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

import _common as common  # noqa: E402
import _runner  # noqa: E402
import configs as bench_configs  # noqa: E402

K = 6
_UNSAFE = re.compile(r'[\\/:*?"<>|\s\x00-\x1f]+')


def topic_for(title: str, paragraph_id: str) -> str:
    """A folder name for the article: its title made path-safe, else the id prefix."""
    topic = _UNSAFE.sub("_", title).strip("._")[:80]
    return topic or (paragraph_id.rsplit("_", 1)[0] or "notes")


def build_corpus(
    data: dict[str, Any], limit: int | None
) -> tuple[dict[str, str], list[tuple[str, str, list[str]]]]:
    """Files (path → text) and the questions as (question, gold path, answer strings)."""
    files: dict[str, str] = {}
    questions: list[tuple[str, str, list[str]]] = []
    for article in data["data"]:
        title = str(article.get("title") or "").strip()
        for paragraph in article["paragraphs"]:
            if limit is not None and len(files) >= limit:
                return files, questions
            pid = str(paragraph["id"])
            path = f"memory/{topic_for(title, pid)}/{pid}.md"
            context = str(paragraph["context"]).strip()
            files[path] = (f"# {title}\n\n{context}\n") if title else f"{context}\n"
            for qa in paragraph["qas"]:
                answers = [str(a["text"]).strip() for a in qa.get("answers", [])]
                questions.append((str(qa["question"]), path, [a for a in answers if a]))
    return files, questions


def load_questions(path: Path, files: dict[str, str]) -> list[tuple[str, str, list[str]]]:
    """Questions of a ``--questions`` file as (question, gold path, answer strings).

    Raises:
        SystemExit: a line is not a JSON object with ``id`` and ``question``, or names a
            paragraph that is not indexed.
    """
    by_id = {p.rsplit("/", 1)[1].removesuffix(".md"): p for p in files}
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            pid, question = str(item["id"]), str(item["question"])
        except (ValueError, KeyError, TypeError) as exc:
            raise SystemExit(f"{path}:{number}: not a question object ({exc})") from None
        if pid not in by_id:
            raise SystemExit(f"{path}:{number}: paragraph {pid} is not indexed (--limit?)")
        answer = str(item.get("answer") or "").strip()
        out.append((question, by_id[pid], [answer] if answer else []))
    return out


def metrics(
    questions: list[tuple[str, str, list[str]]],
    hits: list[list[common.Hit]],
    latencies: list[float],
) -> dict[str, Any]:
    ranks: list[int | None] = []
    chars, answered = [], []
    for (_, gold, answers), found in zip(questions, hits, strict=True):
        found = found[:K]
        ranks.append(next((i for i, h in enumerate(found, 1) if h.path == gold), None))
        chars.append(sum(len(h.text) for h in found))
        answered.append(1.0 if any(a in h.text for a in answers for h in found) else 0.0)
    return {
        "questions": len(questions),
        "R@1": common.mean([1.0 if r == 1 else 0.0 for r in ranks]),
        "R@6": common.mean([1.0 if r is not None else 0.0 for r in ranks]),
        "MRR@6": common.mean([1.0 / r if r else 0.0 for r in ranks]),
        "answer@6": common.mean(answered),
        "chars_per_query": common.mean(chars),
        "p50_ms": common.percentile(latencies, 50),
        "p95_ms": common.percentile(latencies, 95),
    }


def table(results: dict[str, dict[str, Any]]) -> str:
    headers = ["config", "R@1", "R@6", "MRR@6", "answer@6", "chars/query", "p50 ms", "p95 ms"]
    rows = []
    for name, r in results.items():
        if "error" in r:
            rows.append([name, *["n/a"] * (len(headers) - 1)])
            continue
        row = [name, *(common.fmt(r[k]) for k in ("R@1", "R@6", "MRR@6", "answer@6"))]
        row += [common.fmt(round(r["chars_per_query"])), common.fmt(r["p50_ms"], 1)]
        row.append(common.fmt(r["p95_ms"], 1))
        rows.append(row)
    return common.md_table(headers, rows)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="CMRC 2018 retrieval benchmark for memdir (see the module docstring)."
    )
    parser.add_argument("--data", type=Path, required=True, help="cmrc2018_dev.json")
    parser.add_argument("--limit", type=int, default=None, help="first N paragraphs only")
    parser.add_argument(
        "--question-stride",
        type=int,
        default=1,
        metavar="K",
        help="search every K-th question only (all paragraphs stay indexed)",
    )
    parser.add_argument(
        "--questions",
        type=Path,
        default=None,
        metavar="FILE",
        help="JSONL {id, question, answer} to ask instead of CMRC's own (the paraphrase set)",
    )
    common.add_common_args(parser, list(bench_configs.CONFIGS))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if (args.limit is not None and args.limit < 1) or args.question_stride < 1:
        raise SystemExit("--limit and --question-stride must be at least 1")
    data = json.loads(args.data.read_text(encoding="utf-8"))
    configs = bench_configs.select(args.configs)
    files, questions = build_corpus(data, args.limit)
    if args.questions is not None:
        questions = load_questions(args.questions, files)
    total = len(questions)
    questions = questions[:: args.question_stride]
    scope = f"{len(files)} paragraphs" + (f" (--limit {args.limit})" if args.limit else " (all)")
    asked = f" from {args.questions.name}" if args.questions else ""
    split_text = f"dev set, {scope}, {len(questions)} questions{asked}"
    if args.question_stride > 1:
        split_text += f" (one in {args.question_stride} of {total})"
    common.log(f"CMRC 2018: {split_text}")
    key = "cmrc/all" if args.limit is None else f"cmrc/limit-{args.limit}"
    corpus = common.Corpus(key, files, [q for q, _, _ in questions], seed_glob="cmrc/*")

    if args.build_only:
        return _runner.build_only(_runner.Runner.from_args(args), [corpus], configs)
    info = common.machine_info()
    uses_model = any(c.engine == "memdir" and c.embedder != "none" for c in configs)
    info["embedder"] = bench_configs.describe_embedder(args.embedder) if uses_model else "n/a"
    runs, seconds = _runner.run_configs(
        _runner.Runner.from_args(args),
        [corpus],
        configs,
        lambda run: ", ".join(
            f"{k} {common.fmt(v)}"
            for k, v in metrics(questions, run.hits[0], run.latencies_ms[0]).items()
            if k in ("R@1", "R@6")
        ),
    )
    results: dict[str, dict[str, Any]] = {
        name: {"error": run.error}
        if run.error
        else metrics(questions, run.hits[0], run.latencies_ms[0])
        for name, run in runs.items()
    }

    out = [common.report_header("CMRC 2018 retrieval (memory_search)", "cmrc.py", argv, info)]
    out.append(f"- Split: {split_text}; one topic note per paragraph")
    reuse = "; query vectors reused across configurations" if args.reuse_query_vectors else ""
    out.append(f"- Embedder (--embedder {args.embedder}): {info['embedder']}{reuse}")
    if args.fresh_search:
        out.append(
            "- --fresh-search: each workspace searched straight after its files were copied "
            "into a new folder (no `memdir index`; the searches index and embed what they do)"
        )
    out += ["", table(results), "", "Configurations:", ""]
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
            "benchmark": "cmrc2018",
            "machine": info,
            "command": ["python", "benchmarks/cmrc.py", *argv],
            "paragraphs": len(files),
            "questions": len(questions),
            "question_stride": args.question_stride,
            "results": results,
            "runs": _runner.runs_summary(runs, seconds),
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
