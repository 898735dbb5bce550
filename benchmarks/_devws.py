"""A 39-file developer workspace in English and Chinese, with 60 questions and their answers.

The notes of one engineer on a payments service ("Harbor") over eight weeks: ``MEMORY.md``, 27
daily logs, 7 topic notes and 4 skills, written from ``data/devws.json``. Each of the 60 facts
there is one line of one file; the rest is everyday chatter (stand-ups, reviews, small chores)
drawn from a fixed pool with a fixed seed, including near misses that name the same systems
without the answer. A question is answered when a returned snippet contains its fact's ``key``
(a substring of the line).

:func:`build` returns the files and the facts; nothing changes between runs.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "devws.json"
MEMORY = "MEMORY.md"


@dataclass(frozen=True)
class Fact:
    path: str
    line: str
    query: str
    key: str  # a substring of ``line`` that a returned snippet must contain


def load(path: Path = DATA) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def lookups() -> list[Fact]:
    """Searches for an identifier one fact holds ("INC-2291"), with that fact's file and line:
    what people type when they look a name up."""
    data = load()
    facts = [Fact(**item) for item in data["facts"]]
    out = []
    for item in data["lookups"]:
        fact = next(f for f in facts if item["key"] in f.line)
        out.append(Fact(fact.path, fact.line, item["query"], item["key"]))
    return out


def build(seed: int = 7) -> tuple[dict[str, str], list[Fact]]:
    """The workspace's files (path -> text) and the facts whose ``query`` to search."""
    data = load()
    facts = [Fact(**item) for item in data["facts"]]
    rng = random.Random(seed)
    by_path: dict[str, list[Fact]] = {}
    for fact in facts:
        by_path.setdefault(fact.path, []).append(fact)
    files: dict[str, str] = {}
    for day in data["daily"]:
        path = f"memory/{day}.md"
        lines = [rng.choice(data["chatter"]) for _ in range(rng.randint(8, 14))]
        lines = list(dict.fromkeys(lines))
        for fact in by_path.get(path, []):
            lines.insert(rng.randint(1, len(lines)), fact.line)
        half = len(lines) // 2
        body = ["## Morning", *lines[:half], "", "## Afternoon", *lines[half:]]
        files[path] = "\n".join([f"# {day}", "", *body]) + "\n"
    for path, intro in data["topics"].items():
        lines = list(intro)
        for fact in by_path.get(path, []):
            lines.insert(rng.randint(len(intro) // 2 + 1, len(lines)), fact.line)
        files[path] = "\n".join(lines) + "\n"
    sections = {name: list(lines) for name, lines in data["memory_sections"].items()}
    for fact in by_path.get(MEMORY, []):
        sections[data["memory_fact_sections"][fact.key]].append(fact.line)
    memory = ["# Long-term memory", ""]
    for name, lines in sections.items():
        memory += [f"## {name}", "", *lines, ""]
    files[MEMORY] = "\n".join(memory)
    missing = [f.key for f in facts if f.key not in files[f.path]]
    if missing:
        raise AssertionError(f"facts not placed: {missing}")
    return dict(sorted(files.items())), facts
