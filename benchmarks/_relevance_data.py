"""The labelled searches behind the relevance score (issue 26): every kind of workspace we have,
each question with a way to tell whether a result answers it, and off-topic questions.

Kinds of workspace (:data:`KINDS`):

- ``locomo``: LoCoMo conversations, one file per session (dev split: 5 conversations; test
  split: the other 5). A result answers when it shows an evidence turn (``[D1:3]``).
- ``cmrc``: CMRC 2018 paragraphs, one note each (Chinese encyclopedia text). A result answers
  when it comes from the question's own paragraph and shows one of its answers.
- ``dev``: developers' notes in Chinese and English: the 39-file workspace of ``_devws.py``
  and the workspaces we wrote and labelled in ``data/workspaces/`` (``_workspaces.py``). A
  result answers when its snippet holds the answer text.
- ``chat``: a companion's or an assistant's notes of conversations with one person: 10
  MemoryBank users (``_memorybank.py``) and our own chat workspaces. MemoryBank's results answer
  when they cover an evidence exchange's lines, ours when the snippet holds the answer.

Every workspace is also asked the off-topic questions of ``data/offtopic.jsonl`` (118, English
and Chinese) and, for our own workspaces, their own 40 (``unrelated`` and ``near``); none of
them is answered by anything stored.

:func:`suites` lists the workspaces with their questions; :func:`collect` searches one with
``min_score`` 0 and keeps every result's parts (``explain``) and label.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _common as common
import _devws
import _memorybank
import _runner
import _workspaces
import cmrc
import locomo

HERE = Path(__file__).resolve().parent
OFFTOPIC = HERE / "data" / "offtopic.jsonl"
KINDS = ("locomo", "cmrc", "dev", "chat")

#: ``check(path, start_line, end_line, snippet)`` → which of the question's answer items the
#: result holds (indices; empty when none).
Check = Callable[[str, int, int, str], list[int]]


@dataclass
class Probe:
    """One question to search, with how to judge its results."""

    text: str
    on_topic: bool
    items: int  # answer items (evidence turns, exchanges); 0 for an off-topic question
    check: Check | None
    style: str  # the question's style, or the off-topic kind ("unrelated", "near", "shared")


@dataclass
class Suite:
    """One workspace of one kind and what to ask it."""

    name: str
    kind: str
    split: str  # "dev" (may be fitted on) or "test" (held out from every fit)
    corpus: common.Corpus
    probes: list[Probe] = field(default_factory=list)


def shared_offtopic() -> list[str]:
    with OFFTOPIC.open(encoding="utf-8") as fh:
        return [json.loads(line)["query"] for line in fh if line.strip()]


def _offtopic_probes(texts: Sequence[str], kind: str = "shared") -> list[Probe]:
    return [Probe(t, False, 0, None, kind) for t in texts]


def _holds(answer: str) -> Check:
    return lambda path, start, end, snippet: [0] if answer in snippet else []


def locomo_suites(path: Path) -> Iterator[Suite]:
    data = json.loads(path.read_text(encoding="utf-8"))
    stats: Counter[str] = Counter()
    for split, indices in locomo.SPLITS.items():
        for i in indices:
            sample = data[i]
            sessions = locomo.load_sessions(sample["conversation"])
            known = {d for s in sessions for d, _ in s.turns}
            questions = locomo.load_questions(sample["qa"], known, stats)
            files, _ = locomo.build_layout(sessions, "sessions")
            sid = str(sample["sample_id"])
            corpus = common.Corpus(
                f"locomo/sessions/{sid}",
                files,
                [q.text for q in questions],
                seed_glob=f"locomo/*/{sid}",
            )

            def seen(evidence: Sequence[str]) -> Check:
                return lambda p, s, e, snippet: [
                    j for j, ev in enumerate(evidence) if f"[{ev}]" in snippet
                ]

            probes = [
                Probe(q.text, True, len(q.evidence), seen(q.evidence), "locomo") for q in questions
            ]
            yield Suite(f"locomo/{sid}", "locomo", split, corpus, probes)


def cmrc_suites(path: Path, limit: int, stride: int) -> Iterator[Suite]:
    """The first ``limit`` paragraphs as one workspace; its questions split by paragraph
    parity into a dev and a test suite (every ``stride``-th question)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    files, questions = cmrc.build_corpus(data, limit)
    order = {p: i for i, p in enumerate(files)}
    key = f"cmrc/limit-{limit}"
    for split, parity in (("dev", 0), ("test", 1)):
        picked = [q for q in questions if order[q[1]] % 2 == parity][::stride]
        corpus = common.Corpus(key, files, [q for q, _, _ in picked], seed_glob="cmrc/*")

        def gold(want: str, answers: Sequence[str]) -> Check:
            return lambda p, s, e, snippet: (
                [0] if p == want and any(a in snippet for a in answers) else []
            )

        probes = [Probe(q, True, 1, gold(g, a), "cmrc") for q, g, a in picked if a]
        yield Suite(f"cmrc/{split}", "cmrc", split, corpus, probes)


def devws_suite() -> Suite:
    files, facts = _devws.build()
    facts += _devws.lookups()
    corpus = common.Corpus("firstuse/devws", files, [f.query for f in facts])
    probes = [Probe(f.query, True, 1, _holds(f.key), "devws") for f in facts]
    return Suite("devws", "dev", "dev", corpus, probes)


def memorybank_suites(folder: Path) -> Iterator[Suite]:
    for n, user in enumerate(_memorybank.load(folder)):

        def covers(evidence: Sequence[tuple[str, int, int]]) -> Check:
            return lambda p, s, e, snippet: [
                j for j, (path, first, last) in enumerate(evidence)
                if path == p and s <= last and e >= first
            ]  # fmt: skip

        corpus = common.Corpus(
            f"firstuse/memorybank/{user.user}", user.files, [q.text for q in user.questions]
        )
        probes = [
            Probe(q.text, True, len(q.evidence), covers(q.evidence), "memorybank")
            for q in user.questions
        ]
        # Users 8 and 9 are held out from every fit.
        yield Suite(f"memorybank/{user.user}", "chat", "test" if n >= 8 else "dev", corpus, probes)


#: Our own workspaces held out from every fit (one of each kind).
HELD_OUT = ("dev-mixed-mobile", "chat-en-assistant")


def labelled_suites(folder: Path = _workspaces.DATA) -> Iterator[Suite]:
    for ws in _workspaces.load_all(folder):
        corpus = common.Corpus(
            f"labelled/{ws.name}", ws.files, [q.query for q in ws.questions], now=ws.now
        )
        probes = [Probe(q.query, True, 1, _holds(q.answer), q.style) for q in ws.questions]
        probes += [Probe(o.query, False, 0, None, o.kind) for o in ws.offtopic]
        split = "test" if ws.name in HELD_OUT else "dev"
        yield Suite(ws.name, ws.kind, split, corpus, probes)


def suites(
    *,
    locomo_path: Path | None,
    cmrc_path: Path | None,
    memorybank: Path | None,
    cmrc_limit: int = 300,
    cmrc_stride: int = 2,
) -> list[Suite]:
    """Every workspace with its questions (and the shared off-topic questions)."""
    out: list[Suite] = []
    if locomo_path:
        out += locomo_suites(locomo_path)
    if cmrc_path:
        out += cmrc_suites(cmrc_path, cmrc_limit, cmrc_stride)
    out.append(devws_suite())
    if memorybank:
        out += memorybank_suites(memorybank)
    out += labelled_suites()
    shared = shared_offtopic()
    for suite in out:
        suite.probes += _offtopic_probes(shared)
    return out


def collect(
    runner: _runner.Runner,
    suite: Suite,
    *,
    k: int,
    overrides: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Search every probe of ``suite`` with nothing dropped (``min_score`` 0) and return one
    record per search: the query's parts and, per result, its ``explain`` and answer items."""
    import configs as bench_configs
    from memdir import Memory, load_config

    bench = bench_configs.CONFIGS["default"]
    settings = {"search": {"min_score": 0.0, "raw_min_score": 0.0}}
    for table, values in (overrides or {}).items():
        settings.setdefault(table, {}).update(values)
    config = load_config(None, overrides=settings)
    embedder = bench_configs.make_embedder(bench, runner.embedder_kind, reuse_queries=True)
    root, _ = runner._prepare(suite.corpus, bench_configs_index_config(), embedder)
    records: list[dict[str, Any]] = []
    with (
        common.env("MEMDIR_NOW", suite.corpus.now),
        Memory(root, config=config, embedder=embedder) as mem,
    ):
        for probe in suite.probes:
            response = mem.search(probe.text, max_results=k, record=False)
            results = []
            for r in response.results:
                check = probe.check
                items = check(r.path, r.start_line, r.end_line, r.snippet) if check else []
                results.append(
                    {
                        "path": r.path,
                        "lines": [r.start_line, r.end_line],
                        "score": r.score,
                        "items": items,
                        "explain": {k2: v for k2, v in r.explain.items() if k2 != "query"},
                    }
                )
            records.append(
                {
                    "suite": suite.name,
                    "kind": suite.kind,
                    "split": suite.split,
                    "query": probe.text,
                    "on_topic": probe.on_topic,
                    "style": probe.style,
                    "items": probe.items,
                    "unknown": response.unknown,
                    "evidence": response.evidence,
                    "results": results,
                }
            )
    return records


def bench_configs_index_config() -> Any:
    """The index configuration every suite is built with (the default one), so that the
    cached indexes of ``locomo.py``/``cmrc.py`` are reused."""
    import configs as bench_configs
    from memdir import load_config

    return load_config(None, overrides=bench_configs.CONFIGS["default"].overrides)
