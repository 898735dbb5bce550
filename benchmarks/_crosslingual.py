"""Cross-lingual labelled questions (issue 34), read from ``benchmarks/data/crosslingual/*.json``:
a question asked in one language about a note written in the other.

Each file is one set of questions over one workspace, of one *kind* (``dev``: an engineer's or
a team's notes; ``chat``: a companion's or assistant's notes of conversations with one person;
``locomo``: LoCoMo's English conversations asked in Chinese), and of one *split* (``dev``: may
be tuned or fitted on; ``test``: held out from everything, whole workspaces)::

    {
      "about": "who wrote the notes, in which languages; who wrote the questions",
      "kind": "dev" | "chat" | "locomo",
      "split": "dev" | "test",
      # the workspace, one of:
      "workspace": "dev-zh-payments",             # a file of data/workspaces/ (its files, now)
      "locomo": "conv-26",                        # a LoCoMo sample (sessions layout)
      "files": {"MEMORY.md": "..."}, "now": "2026-11-30T18:00:00",   # a workspace of its own
      "questions": [
        {"query": "When does the membership points redesign launch?", "lang": "en",
         "answer": "1 月 15 日", "path": "MEMORY.md", "style": "when",
         "variant": "会员积分改版什么时候上线？"},
        # LoCoMo: the evidence turns instead of answer/path
        {"query": "Caroline 去的是哪个支持小组？", "lang": "zh", "evidence": ["D1:3"],
         "style": "locomo", "variant": "What support group did Caroline attend?"}
      ],
      "offtopic": [{"query": "...", "lang": "en", "kind": "unrelated" | "near"}]   # optional
    }

``lang`` is the question's language; the note holding the answer is in the other one. A
question shares no word with its answer line except names and numbers (checked here:
:func:`shared_words`). ``variant`` is the same question written in the note's language, as a
calling model that translates the question would write it (without seeing the note): the
input of the "agent translates" measure (``memory_search`` with ``queries``).

``python benchmarks/_crosslingual.py`` checks every file and prints a summary; a question that
fails a check is printed with the reason and the exit status is 1.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

import _workspaces  # noqa: E402

DATA = _HERE / "data" / "crosslingual"
KINDS = ("dev", "chat", "locomo")
SPLITS = ("dev", "test")
LANGS = ("en", "zh")
STYLES = (*_workspaces.STYLES, "locomo")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")


@dataclass(frozen=True)
class XQuestion:
    query: str
    lang: str
    variant: str
    style: str
    answer: str = ""
    path: str = ""
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True)
class XOffTopic:
    query: str
    lang: str
    kind: str


@dataclass
class XSet:
    name: str
    kind: str
    split: str
    about: str
    workspace: str = ""
    locomo: str = ""
    files: dict[str, str] = field(default_factory=dict)
    now: str = ""
    questions: list[XQuestion] = field(default_factory=list)
    offtopic: list[XOffTopic] = field(default_factory=list)


def language(text: str) -> str:
    """``zh`` when CJK characters are at least a fifth of the letters, else ``en``."""
    cjk = len(_CJK.findall(text))
    latin_words = len(re.findall(r"[A-Za-z]+", text))
    return "zh" if cjk and cjk >= 0.2 * (cjk + 4 * latin_words) else "en"


def _word_forms(text: str) -> set[str]:
    from memdir.text import query_terms

    return set(query_terms(text))


def _name_like(query: str) -> set[str]:
    """Terms of ``query`` that are names or numbers: words written with a capital letter or a
    digit (Kafka, JPush, P0, 7.4.0, 1 月 15 日's 15), as memdir tokenises them."""
    from memdir.text import query_terms

    out: set[str] = set()
    for word in re.findall(r"[^\W_]+", query):
        if _CJK.search(word):
            continue
        if any(ch.isdigit() for ch in word) or any(ch.isupper() for ch in word):
            out.update(query_terms(word))
    return out


def shared_words(query: str, line: str) -> list[str]:
    """The words ``query`` shares with ``line`` other than names and numbers (should be none)."""
    common = _word_forms(query) & _word_forms(line)
    return sorted(common - _name_like(query))


def answer_line(files: dict[str, str], q: XQuestion) -> str:
    lines = [ln for ln in files.get(q.path, "").splitlines() if q.answer in ln]
    return lines[0] if len(lines) == 1 else ""


def load(path: Path) -> XSet:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    xs = XSet(path.stem, data["kind"], data["split"], data.get("about", ""))
    if xs.kind not in KINDS or xs.split not in SPLITS:
        raise ValueError(f"{xs.name}: kind {xs.kind!r} / split {xs.split!r}")
    sources = [k for k in ("workspace", "locomo", "files") if k in data]
    if len(sources) != 1:
        raise ValueError(f"{xs.name}: name exactly one of workspace, locomo, files")
    if "workspace" in data:
        xs.workspace = data["workspace"]
        ws = _workspaces.load(_workspaces.DATA / f"{xs.workspace}.json")
        xs.files, xs.now = ws.files, ws.now
    elif "locomo" in data:
        xs.locomo = str(data["locomo"])
    else:
        xs.files, xs.now = data["files"], data["now"]
    for q in data["questions"]:
        q = dict(q)
        if "evidence" in q:
            q["evidence"] = tuple(q["evidence"])
        xs.questions.append(XQuestion(**q))
    xs.offtopic = [XOffTopic(**o) for o in data.get("offtopic", [])]
    return xs


def problems(xs: XSet, locomo_turns: dict[str, dict[str, str]] | None = None) -> list[str]:
    """What is wrong with ``xs`` (empty: nothing)."""
    out: list[str] = []
    seen: set[str] = set()
    for q in xs.questions:
        where = f"{xs.name}: {q.query!r}"
        if q.query in seen:
            out.append(f"{where}: asked twice")
        seen.add(q.query)
        if q.lang not in LANGS or language(q.query) != q.lang:
            out.append(f"{where}: lang {q.lang!r}, but the question reads {language(q.query)}")
        if not q.variant or language(q.variant) == q.lang:
            out.append(f"{where}: the variant must be the question in the other language")
        if q.style not in STYLES:
            out.append(f"{where}: style {q.style!r} not in {STYLES}")
        if xs.locomo:
            turns = (locomo_turns or {}).get(xs.locomo)
            if not q.evidence:
                out.append(f"{where}: no evidence")
            elif turns is not None:
                missing = [e for e in q.evidence if e not in turns]
                if missing:
                    out.append(f"{where}: evidence {missing} not in {xs.locomo}")
                for e in q.evidence:
                    if e in turns and (bad := shared_words(q.query, turns[e])):
                        out.append(f"{where}: shares {bad} with {e}")
            continue
        line = answer_line(xs.files, q)
        if not line:
            out.append(f"{where}: {q.answer!r} is not on exactly one line of {q.path}")
            continue
        if language(line) == q.lang:
            out.append(f"{where}: the answer line is in the question's language: {line!r}")
        if bad := shared_words(q.query, line):
            out.append(f"{where}: shares {bad} with its answer line {line!r}")
    for o in xs.offtopic:
        if o.lang not in LANGS or o.kind not in _workspaces.OFFTOPIC_KINDS:
            out.append(f"{xs.name}: off-topic {o.query!r}: lang {o.lang!r} kind {o.kind!r}")
    return out


def load_all(folder: Path = DATA) -> list[XSet]:
    return [load(p) for p in sorted(folder.glob("*.json"))]


def locomo_turns(path: Path) -> dict[str, dict[str, str]]:
    """sample_id → dia_id → the turn's line, for checking LoCoMo sets."""
    import locomo

    data = json.loads(path.read_text(encoding="utf-8"))
    out: dict[str, dict[str, str]] = {}
    for sample in data:
        sessions = locomo.load_sessions(sample["conversation"])
        out[str(sample["sample_id"])] = {d: line for s in sessions for d, line in s.turns}
    return out


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, help="locomo10.json, to check LoCoMo sets")
    parser.add_argument("folder", nargs="?", type=Path, default=DATA)
    args = parser.parse_args(argv)
    turns = locomo_turns(args.locomo) if args.locomo else None
    status = 0
    total: dict[tuple[str, str], int] = {}
    for path in sorted(args.folder.glob("*.json")):
        try:
            xs = load(path)
            found = problems(xs, turns)
        except (ValueError, KeyError, TypeError, json.JSONDecodeError) as exc:
            print(f"FAIL {path.name}: {exc}")
            status = 1
            continue
        for p in found:
            print(f"FAIL {p}")
        status |= bool(found)
        langs = {lang: sum(q.lang == lang for q in xs.questions) for lang in LANGS}
        total[xs.kind, xs.split] = total.get((xs.kind, xs.split), 0) + len(xs.questions)
        print(
            f"{'ok  ' if not found else 'BAD '} {xs.name} ({xs.kind}, {xs.split}): "
            f"{len(xs.questions)} questions {langs}, off-topic {len(xs.offtopic)}"
        )
    for (kind, split), n in sorted(total.items()):
        print(f"     {kind}/{split}: {n} questions")
    return status


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
