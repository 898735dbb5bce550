"""MemoryBank (SiliconFriend) Chinese conversations as memdir workspaces, with evidence.

The data set (``memory_bank_cn.json``, ``probing_questions_cn.jsonl``; MIT license) holds ~10
days of chat between each of 15 users and an AI companion, and 5–7 probing questions per user
without gold answers. :data:`EVIDENCE` is our annotation for the first 10 users: for each
question, the exchanges (``"YYYY-MM-DD#i"``, the i-th exchange of that day) that answer it; three
questions that ask for a whole day's topics are left out (``None``), which leaves 67.

Each user's workspace holds one daily log per day, ``memory/YYYY-MM-DD.md``: a ``# date``
heading, then each exchange as two bullet lines, the user's words and the companion's reply.
A question is answered when a returned result's line range covers a line of one of its
evidence exchanges.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

#: user → one entry per probing question: its evidence exchanges, or None (not annotated).
EVIDENCE: dict[str, list[list[str] | None]] = {
    "张曼婷": [["2023-04-30#3"], ["2023-05-01#0"], ["2023-05-03#2"], ["2023-04-28#1"],
              ["2023-04-30#2"], ["2023-05-02#1"], ["2023-05-04#1"]],
    "王峰": [["2023-04-27#2"], ["2023-04-28#8"], ["2023-04-29#1"], ["2023-05-05#1"],
             ["2023-05-06#1"], ["2023-04-30#1"], ["2023-04-28#2"]],
    "李雪": [["2023-04-27#3"], ["2023-04-29#1", "2023-04-29#2"], ["2023-04-28#1"],
             ["2023-04-30#1"], ["2023-05-03#0"], ["2023-05-02#1"], ["2023-04-28#1"]],
    "孙悦": [["2023-04-28#1"], ["2023-04-27#4"], ["2023-05-03#1"], ["2023-05-01#1"],
             ["2023-04-27#2"], ["2023-04-30#1"], ["2023-05-04#0"]],
    "周立": [["2023-04-28#2"], ["2023-04-29#3"], ["2023-04-28#2"], ["2023-04-27#4"],
             ["2023-05-01#1"], ["2023-05-02#3"], ["2023-05-04#1"]],
    "刘琳": [["2023-05-06#1"], ["2023-05-06#3"], None, ["2023-04-28#2"], ["2023-05-02#1"],
             ["2023-05-01#1"], ["2023-05-04#2"]],
    "张志强": [["2023-04-28#1"], None, ["2023-04-28#2"], ["2023-04-30#0"], ["2023-05-05#0"],
              ["2023-05-04#0"], ["2023-05-06#0"]],
    "宫晓燕": [None, ["2023-05-06#1", "2023-05-06#2"], ["2023-05-02#0"], ["2023-04-28#2"],
              ["2023-04-27#3"], ["2023-05-05#0"], ["2023-05-02#0"]],
    "郝明": [["2023-04-27#1"], ["2023-04-30#0"], ["2023-04-30#1"], ["2023-05-04#1"],
             ["2023-05-06#1"], ["2023-04-28#2"], ["2023-05-02#0"]],
    "姚国栋": [["2023-04-28#2"], ["2023-05-04#0"], ["2023-05-05#1"], ["2023-05-04#1"],
              ["2023-05-02#0", "2023-05-02#1"], ["2023-04-30#0"], ["2023-05-03#0"]],
}  # fmt: skip


@dataclass(frozen=True)
class Question:
    text: str
    evidence: tuple[tuple[str, int, int], ...]  # (path, first line, last line) per exchange


@dataclass(frozen=True)
class UserWorkspace:
    user: str
    files: dict[str, str]
    questions: list[Question]


def load(folder: Path) -> list[UserWorkspace]:
    """One workspace per annotated user, from the MemoryBank folder (``memory_bank_cn.json``
    and ``probing_questions_cn.jsonl``)."""
    history = json.loads((folder / "memory_bank_cn.json").read_text(encoding="utf-8"))
    probing: dict[str, list[str]] = {}
    with (folder / "probing_questions_cn.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                probing.update(json.loads(line))
    out = []
    for user, marks in EVIDENCE.items():
        files: dict[str, str] = {}
        where: dict[str, tuple[str, int, int]] = {}
        for day, exchanges in history[user]["history"].items():
            path = f"memory/{day}.md"
            lines = [f"# {day}", ""]
            for i, exchange in enumerate(exchanges):
                first = len(lines) + 1
                lines.append(f"- {user}：{_one_line(exchange['query'])}")
                lines.append(f"- AI：{_one_line(exchange['response'])}")
                where[f"{day}#{i}"] = (path, first, first + 1)
            files[path] = "\n".join(lines) + "\n"
        questions = [
            Question(text, tuple(where[e] for e in evidence))
            for text, evidence in zip(probing[user], marks, strict=True)
            if evidence is not None
        ]
        out.append(UserWorkspace(user, files, questions))
    return out


def answered(question: Question, hits: list[tuple[str, int, int]]) -> float:
    """Share of the question's evidence exchanges that a hit ``(path, start, end)`` covers."""
    found = sum(
        any(p == path and start <= last and end >= first for p, start, end in hits)
        for path, first, last in question.evidence
    )
    return found / len(question.evidence)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())
