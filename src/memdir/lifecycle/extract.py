"""Extraction: an LLM reads a conversation and returns durable items for MEMORY.md
(docs/design.md#lifecycle).

The model answers one JSON object, ``{"items": [{"category": …, "text": …}]}``, in the five
categories of :data:`CATEGORIES`. Each item goes to its MEMORY.md section through the shared
writer (:func:`~memdir.lifecycle.write.write_memory`), or to the daily log when MEMORY.md may
not be written (a shared session).

Duplicates are skipped: the writer's normalised exact match and Jaccard ≥ 0.9, and before that,
when an embedder is available, cosine similarity ≥ 0.95 to a line of the same section.

An answer that is not that JSON is retried once with a note saying what was wrong, then dropped
with a warning. Nothing the model says is ever written raw: an item that reads like a prompt
injection (:func:`~memdir.safety.untrusted.looks_like_injection`) is not written but reported, and
the conversation the model reads is escaped inside its fence
(:func:`~memdir.safety.untrusted.escape_untrusted`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from memdir.audit import audited
from memdir.audit.seam import from_session, plural
from memdir.embeddings.base import Embedder
from memdir.errors import MemdirError, ProviderError
from memdir.lifecycle.compact import render_transcript
from memdir.lifecycle.write import WriteResult, write_memory
from memdir.llm.base import LLM, Message, count_tokens
from memdir.llm.prompts import load_prompt
from memdir.markdown.sections import content_lines, find_section, parse_sections
from memdir.safety.untrusted import escape_untrusted, looks_like_injection, preview
from memdir.workspace.layout import MEMORY_FILE, Workspace

#: Category → MEMORY.md section key.
CATEGORIES: dict[str, str] = {
    "preference": "preferences",
    "decision": "decisions",
    "lesson": "lessons",
    "project fact": "facts",
    "todo": "todos",
}
#: Other spellings models use for the categories.
_ALIASES = {
    "preferences": "preference",
    "decisions": "decision",
    "lessons": "lesson",
    "lesson learned": "lesson",
    "fact": "project fact",
    "facts": "project fact",
    "project facts": "project fact",
    "projectfact": "project fact",
    "todos": "todo",
    "to do": "todo",
    "task": "todo",
}
#: Cosine similarity at or above which an item duplicates a line (when an embedder is given).
EMBEDDING_DUPLICATE = 0.95
MAX_ITEMS = 20
#: The conversation shown to the model is cut to its most recent part above this many tokens.
MAX_INPUT_TOKENS = 24_000

_FENCE_RE = re.compile(r"^\s*```[\w-]*\s*\n(.*?)\n\s*```\s*$", re.S)


class MalformedExtraction(ValueError):
    """The model's answer is not the JSON object the extract prompt asks for."""


@dataclass(frozen=True)
class ExtractedItem:
    """One durable item: its category (a key of :data:`CATEGORIES`) and sentence."""

    category: str
    text: str

    @property
    def section(self) -> str:
        return CATEGORIES[self.category]


@dataclass
class ExtractionReport:
    """What an extraction found and where it went.

    Attributes:
        items: the valid items the model returned.
        results: one per item written or skipped as a duplicate, in order.
        refused: items that read like a prompt injection: not written (each is a warning too).
        warnings: malformed answers, invalid items, items that could not be written.
        attempts: LLM calls made (2 when the first answer was malformed).
    """

    items: list[ExtractedItem] = field(default_factory=list)
    results: list[WriteResult] = field(default_factory=list)
    refused: list[ExtractedItem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    attempts: int = 0

    @property
    def written(self) -> list[WriteResult]:
        return [r for r in self.results if r.written]


def parse_extraction(reply: str) -> tuple[list[ExtractedItem], list[str]]:
    """Parse an extraction answer into items, with a warning per item that was dropped.

    Raises:
        MalformedExtraction: the answer is not a JSON object with an ``items`` list.
    """
    text = reply.strip()
    fenced = _FENCE_RE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        data: Any = json.loads(text)
    except ValueError:
        start = text.find("{")
        try:
            data = json.JSONDecoder().raw_decode(text[start:])[0] if start >= 0 else None
        except ValueError:
            data = None
        if data is None:
            raise MalformedExtraction("it is not JSON") from None
    if isinstance(data, list):
        data = {"items": data}
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        raise MalformedExtraction('it is not an object with an "items" list')
    items: list[ExtractedItem] = []
    warnings: list[str] = []
    for n, raw in enumerate(data["items"], start=1):
        if not isinstance(raw, dict):
            warnings.append(f"extraction: item {n} is not an object; dropped")
            continue
        category = _category(raw.get("category"))
        text_value = raw.get("text")
        if category is None:
            warnings.append(f"extraction: item {n} has an unknown category; dropped")
        elif not isinstance(text_value, str) or not text_value.strip():
            warnings.append(f"extraction: item {n} has no text; dropped")
        else:
            items.append(ExtractedItem(category, text_value.strip()))
    if len(items) > MAX_ITEMS:
        warnings.append(f"extraction: kept the first {MAX_ITEMS} of {len(items)} items")
        items = items[:MAX_ITEMS]
    return items, warnings


def _category(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    name = " ".join(value.replace("_", " ").replace("-", " ").split()).casefold()
    name = _ALIASES.get(name, name)
    return name if name in CATEGORIES else None


def extract_memories(
    workspace: Workspace,
    messages: Sequence[Message],
    llm: LLM,
    *,
    now: datetime,
    embedder: Embedder | None = None,
    private: bool = True,
    max_input_tokens: int = MAX_INPUT_TOKENS,
    session: str | None = None,
    via: str | None = None,
) -> ExtractionReport:
    """Ask ``llm`` for the durable items of ``messages`` and write the new ones.

    Args:
        workspace: where MEMORY.md and the daily logs are.
        messages: the conversation; only user and assistant messages are shown to the model.
        llm: the model.
        now: the current time (the daily log's date).
        embedder: for the embedding-similarity duplicate check; None skips it.
        private: False (a shared session) writes to the daily log instead of MEMORY.md.
        max_input_tokens: only the most recent messages that fit are shown to the model.
        session: the chat session, for the audit record (``extract: 2 items from session …``).
        via: what asked for it (``chat /remember``), for the audit record.

    Returns:
        The report; provider failures and malformed answers become warnings, never raises.
    """
    report = ExtractionReport()
    conversation = _recent(messages, max_input_tokens)
    if not conversation:
        return report
    fenced = escape_untrusted(conversation)
    request = [Message("user", f"<conversation>\n{fenced}\n</conversation>")]
    system = load_prompt("extract")
    items: list[ExtractedItem] | None = None
    for attempt in range(2):
        report.attempts += 1
        try:
            reply = llm.complete(request, system=system)
        except MemdirError as exc:
            report.warnings.append(f"extraction failed: {exc}")
            return report
        try:
            items, item_warnings = parse_extraction(reply)
        except MalformedExtraction as exc:
            if attempt == 0:
                retry = load_prompt("extract_retry").replace("{{problem}}", str(exc))
                request = [*request, Message("assistant", reply), Message("user", retry)]
                continue
            report.warnings.append(
                f"extraction skipped: the model's answer was not valid JSON twice ({exc})"
            )
            return report
        report.warnings.extend(item_warnings)
        break
    report.items = items or []
    with audited(workspace, "extract", session=session, via=via) as op:
        _write_items(workspace, report, now, embedder if private else None, private)
        source = from_session(session) or (f" via {via}" if via else "")
        op.describe(plural(len(report.written), "item") + source)
    report.warnings.extend(op.warnings)
    return report


def _write_items(
    workspace: Workspace,
    report: ExtractionReport,
    now: datetime,
    embedder: Embedder | None,
    private: bool,
) -> None:
    dedup = _EmbeddingDedup(workspace, embedder, report.warnings) if private else None
    for item in report.items:
        if looks_like_injection(item.text):
            report.refused.append(item)
            report.warnings.append(
                "extraction: an item that reads like a prompt injection was not written: "
                + preview(item.text)
            )
            continue
        try:
            if dedup is not None:
                duplicate = dedup.find(item)
                if duplicate is not None:
                    report.results.append(duplicate)
                    continue
                result = write_memory(
                    workspace, item.text, target="memory", section=item.section, now=now
                )
            else:
                result = write_memory(
                    workspace, f"{item.category.capitalize()}: {item.text}", target="daily", now=now
                )
        except MemdirError as exc:
            report.warnings.append(f"extraction: an item was not written: {exc}")
            continue
        report.results.append(result)
        if dedup is not None and result.written:
            dedup.forget()


def _recent(messages: Sequence[Message], max_tokens: int) -> str:
    """The conversation's user and assistant text, most recent part within ``max_tokens``."""
    kept: list[Message] = []
    used = 0
    for message in reversed(messages):
        if message.role not in ("user", "assistant"):
            continue
        cost = count_tokens(message.content) + 4
        if kept and used + cost > max_tokens:
            break
        kept.append(message)
        used += cost
    return render_transcript(list(reversed(kept)))


class _EmbeddingDedup:
    """Cosine similarity of an item to the lines of its MEMORY.md section."""

    def __init__(self, workspace: Workspace, embedder: Embedder | None, warnings: list[str]):
        self.workspace = workspace
        self.embedder = embedder
        self.warnings = warnings
        self._sections: dict[str, list[tuple[int, str]]] | None = None

    def forget(self) -> None:
        """MEMORY.md changed: read it again next time."""
        self._sections = None

    def find(self, item: ExtractedItem) -> WriteResult | None:
        if self.embedder is None:
            return None
        lines = self._lines(item.section)
        if not lines:
            return None
        try:
            vectors = self.embedder.embed_documents([item.text, *(text for _, text in lines)])
        except ProviderError as exc:
            self.warnings.append(f"extraction: embedding duplicate check skipped: {exc}")
            self.embedder = None
            return None
        similarities = vectors[1:] @ vectors[0]
        best = int(np.argmax(similarities))
        score = float(similarities[best])
        if score < EMBEDDING_DUPLICATE:
            return None
        line = lines[best][0] + 1
        reason = f"skipped: near duplicate of {MEMORY_FILE} line {line} (embedding {score:.2f})"
        return WriteResult(MEMORY_FILE, line, False, reason, item.text)

    def _lines(self, section: str) -> list[tuple[int, str]]:
        if self._sections is None:
            try:
                text = self.workspace.read_file(MEMORY_FILE).decode("utf-8")
            except (OSError, UnicodeDecodeError, MemdirError):  # missing, a symlink, not UTF-8
                text = ""
            sections = parse_sections(text)
            self._sections = {}
            for key in CATEGORIES.values():
                found = find_section(sections, key)
                self._sections[key] = (
                    content_lines(text, found.heading_line + 1, found.end) if found else []
                )
        return self._sections[section]
