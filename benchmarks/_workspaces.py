"""Realistic labelled workspaces for the relevance benchmarks (issue 26), read from
``benchmarks/data/workspaces/*.json``.

Each file is one workspace that we wrote and labelled ourselves, of one *kind* (``dev``: an
engineer's or a team's notes, Chinese and English; ``chat``: a companion or assistant's notes
of conversations with one person, MemoryBank-style). A file holds::

    {
      "about": "who wrote these notes, over what time, in which languages",
      "kind": "dev" | "chat",
      "now": "2026-11-30T18:00:00",          # the searches run at this time (MEMDIR_NOW)
      "files": {"MEMORY.md": "...", "memory/2026-11-02.md": "...", ...},
      "questions": [
        {"query": "what port does the payments db use", "answer": "5433",
         "path": "MEMORY.md", "style": "paraphrase"},
        ...
      ],
      "offtopic": [{"query": "who won the 1998 World Cup", "kind": "unrelated"}, ...]
    }

A question is answered when a returned snippet contains its ``answer`` (a substring of one line
of ``path``; the same text may be quoted elsewhere, e.g. by a session archive, and a snippet
holding it there counts too). ``style`` says how the question is phrased (``direct``,
``paraphrase``, ``who``, ``when``, ``keyword``, ``yes-no``). An off-topic question is one the
workspace cannot answer: ``unrelated`` (general knowledge, another part of life) or ``near``
(the person's own domain, but the answer is not stored).

``python benchmarks/_workspaces.py`` checks every file (answers present, paths allowed, no
duplicate question) and prints a summary.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "workspaces"
KINDS = ("dev", "chat")
STYLES = ("direct", "paraphrase", "who", "when", "keyword", "yes-no")
OFFTOPIC_KINDS = ("unrelated", "near")
_INDEXED = re.compile(r"^(MEMORY\.md|memory/.+\.md|skills/[^/]+/SKILL\.md)$")
_READ_ONLY = {"USER.md", "AGENTS.md"}


@dataclass(frozen=True)
class Question:
    query: str
    answer: str
    path: str
    style: str


@dataclass(frozen=True)
class OffTopic:
    query: str
    kind: str


@dataclass(frozen=True)
class LabelledWorkspace:
    name: str
    kind: str
    about: str
    now: str
    files: dict[str, str]
    questions: list[Question]
    offtopic: list[OffTopic]


def load(path: Path) -> LabelledWorkspace:
    """One workspace file, checked (ValueError names the first problem)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    name = path.stem
    kind = data["kind"]
    if kind not in KINDS:
        raise ValueError(f"{name}: kind {kind!r} is not one of {KINDS}")
    files: dict[str, str] = data["files"]
    for file in files:
        if not (_INDEXED.match(file) or file in _READ_ONLY):
            raise ValueError(f"{name}: {file} is not a file memdir indexes or reads")
    questions = [Question(**q) for q in data["questions"]]
    seen: set[str] = set()
    for q in questions:
        if q.style not in STYLES:
            raise ValueError(f"{name}: {q.query!r}: style {q.style!r} is not one of {STYLES}")
        if q.path not in files or not _INDEXED.match(q.path):
            raise ValueError(f"{name}: {q.query!r}: {q.path} is not an indexed file here")
        if not any(q.answer in line for line in files[q.path].splitlines()):
            raise ValueError(f"{name}: {q.query!r}: {q.answer!r} is not on one line of {q.path}")
        if sum(q.answer in line for line in files[q.path].splitlines()) > 1:
            raise ValueError(f"{name}: {q.query!r}: {q.answer!r} is on several lines of {q.path}")
        if q.query in seen:
            raise ValueError(f"{name}: {q.query!r} asked twice")
        seen.add(q.query)
    offtopic = [OffTopic(**o) for o in data["offtopic"]]
    for o in offtopic:
        if o.kind not in OFFTOPIC_KINDS:
            raise ValueError(f"{name}: {o.query!r}: kind {o.kind!r} not in {OFFTOPIC_KINDS}")
    return LabelledWorkspace(name, kind, data["about"], data["now"], files, questions, offtopic)


def load_all(folder: Path = DATA) -> list[LabelledWorkspace]:
    """Every workspace in ``folder``, by name."""
    return [load(p) for p in sorted(folder.glob("*.json"))]


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else DATA
    status = 0
    for path in sorted(folder.glob("*.json")):
        try:
            ws = load(path)
        except (ValueError, KeyError, TypeError, json.JSONDecodeError) as exc:
            print(f"FAIL {path.name}: {exc}")
            status = 1
            continue
        chars = sum(len(t) for t in ws.files.values())
        for q in ws.questions:
            elsewhere = [f for f, t in ws.files.items() if f != q.path and q.answer in t]
            if elsewhere:
                print(f"     note {ws.name}: {q.answer!r} also in {', '.join(elsewhere)}")
        styles = {s: sum(q.style == s for q in ws.questions) for s in STYLES}
        off = {k: sum(o.kind == k for o in ws.offtopic) for k in OFFTOPIC_KINDS}
        print(
            f"ok   {ws.name} ({ws.kind}): {len(ws.files)} files, {chars:,} chars, "
            f"{len(ws.questions)} questions {styles}, off-topic {off}"
        )
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
