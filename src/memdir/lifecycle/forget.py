"""``memdir forget``: find lines to remove, show them, remove them for good.

A target is either a place, ``PATH#Lx`` or ``PATH#Lx-Ly`` (a search citation), or a query: the
query is searched and, in each hit, the lines that carry most of its terms are taken
(:func:`pick_lines`). Each line is marked generated (memdir wrote it,
:mod:`memdir.audit.provenance`) or the person's.

Removing (:func:`remove_lines`) happens in one audited ``forget`` operation under the workspace
write lock: each file is re-read and a line is removed only when its text is still the text that
was shown (a line that moved is found again nearby; one that changed is left, with a warning).
A person's line needs ``force``. The record (a commit, or a log line holding the removed text)
makes the removal undoable. The caller then updates the index and tells the recall store, so
that dreaming never brings a forgotten line back (:meth:`memdir.dreaming.store.RecallStore.forget`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memdir.audit import audited, check_writable, read_text, write_text
from memdir.audit.merge import line_key
from memdir.audit.provenance import Provenance
from memdir.errors import MemdirError
from memdir.markdown.sections import split_lines
from memdir.search.types import SearchResponse
from memdir.text import similarity_tokens
from memdir.workspace.layout import Workspace

#: A query line is taken when it carries at least this share of the query's terms.
MIN_COVERAGE = 0.6
#: How far (lines) a line that moved since the preview is looked for.
MOVE_WINDOW = 50
_PLACE_RE = re.compile(r"^(?P<path>.+?)#L(?P<start>\d+)(?:-L?(?P<end>\d+))?$")
_HEADING_RE = re.compile(r"^ {0,3}#{1,6}(?:\s|$)")


@dataclass(frozen=True)
class ForgetLine:
    """One line to remove.

    Attributes:
        path: workspace-relative path.
        line: 1-based line number (when found).
        text: the line without its terminator.
        generated: memdir wrote it (else a person did: removing it needs ``force``).
    """

    path: str
    line: int
    text: str
    generated: bool

    @property
    def citation(self) -> str:
        return f"{self.path}#L{self.line}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "text": self.text,
            "generated": self.generated,
            "citation": self.citation,
        }


@dataclass
class ForgetResult:
    """What forget found and (with ``apply``) removed."""

    target: str
    lines: list[ForgetLine]
    applied: bool = False
    removed: list[ForgetLine] = field(default_factory=list)
    refused: list[ForgetLine] = field(default_factory=list)  # the person's, without force
    warnings: list[str] = field(default_factory=list)
    record: str | None = None  # the audit record's id
    commit: str | None = None  # its commit, in a git workspace
    recalls_dropped: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "applied": self.applied,
            "lines": [x.to_dict() for x in self.lines],
            "removed": [x.to_dict() for x in self.removed],
            "refused": [x.to_dict() for x in self.refused],
            "warnings": self.warnings,
            "record": self.record,
            "commit": self.commit,
            "recalls_dropped": self.recalls_dropped,
        }


def parse_place(target: str) -> tuple[str, int, int] | None:
    """``(path, first, last)`` of ``PATH#Lx`` / ``PATH#Lx-Ly``, or None for a query.

    Raises:
        MemdirError: a place whose range is empty or starts at 0.
    """
    match = _PLACE_RE.match(target.strip())
    if match is None or not match.group("path").lower().endswith(".md"):
        return None
    first = int(match.group("start"))
    last = int(match.group("end") or first)
    if first < 1 or last < first:
        raise MemdirError(f"{target}: a line range is #Lfirst-Llast with 1 ≤ first ≤ last")
    return match.group("path"), first, last


def lines_at(
    workspace: Workspace, provenance: Provenance, path: str, first: int, last: int
) -> list[ForgetLine]:
    """The lines ``first``..``last`` of ``path`` (blank lines skipped).

    Raises:
        MemdirError: the file does not exist or is shorter than ``first``.
    """
    text = read_text(workspace, path)
    if text is None:
        raise MemdirError(f"{path}: no such file")
    lines = [line_key(x) for x in split_lines(text)]
    if first > len(lines):
        raise MemdirError(f"{path} has {len(lines)} lines; #L{first} is past its end")
    generated = provenance.generated(path, lines)
    return [
        ForgetLine(path, n, lines[n - 1], n - 1 in generated)
        for n in range(first, min(last, len(lines)) + 1)
        if lines[n - 1].strip()
    ]


def pick_lines(
    query: str, path: str, lines: Sequence[str], first: int, last: int, generated: set[int]
) -> list[ForgetLine]:
    """The lines of a search hit (``first``..``last``, 1-based) that carry at least
    :data:`MIN_COVERAGE` of the query's terms; headings never."""
    terms = similarity_tokens(query)
    if not terms:
        return []
    out = []
    for n in range(max(1, first), min(last, len(lines)) + 1):
        text = lines[n - 1]
        if not text.strip() or _HEADING_RE.match(text):
            continue
        coverage = len(terms & similarity_tokens(text)) / len(terms)
        if coverage >= MIN_COVERAGE:
            out.append(ForgetLine(path, n, text, n - 1 in generated))
    return out


def find_targets(
    workspace: Workspace,
    target: str,
    provenance: Provenance,
    search: Callable[[str], SearchResponse],
) -> list[ForgetLine]:
    """The lines ``target`` names: a place's lines, or for a query the lines of ``search``'s
    hits in memory files (never extra paths: the person's own files) that carry its terms."""
    place = parse_place(target)
    if place is not None:
        path, first, last = place
        shown = workspace.display_path(workspace.resolve_memory_path(path))
        return lines_at(workspace, provenance, shown, first, last)
    out: list[ForgetLine] = []
    seen: set[tuple[str, int]] = set()
    for hit in search(target).results:
        if hit.source != "memory":
            continue
        text = read_text(workspace, hit.path)
        if text is None:
            continue
        lines = [line_key(x) for x in split_lines(text)]
        generated = provenance.generated(hit.path, lines)
        for item in pick_lines(target, hit.path, lines, hit.start_line, hit.end_line, generated):
            if (item.path, item.line) not in seen:
                seen.add((item.path, item.line))
                out.append(item)
    return sorted(out, key=lambda x: (x.path, x.line))


def remove_lines(
    workspace: Workspace,
    wanted: Sequence[ForgetLine],
    *,
    force: bool,
    summary: str,
    via: str | None,
    provenance: Provenance,
) -> ForgetResult:
    """Remove ``wanted`` (see the module docstring); one audited ``forget`` operation."""
    result = ForgetResult(summary, list(wanted), applied=True)
    by_path: dict[str, list[ForgetLine]] = {}
    for item in wanted:
        by_path.setdefault(item.path, []).append(item)
    check_writable(workspace, *by_path)  # every file or none: refused before the first change
    with audited(workspace, "forget", via=via) as op:
        for path, items in sorted(by_path.items()):
            _remove_from_file(workspace, path, items, force, provenance, result)
        count = len(result.removed)
        op.describe(f"removed {count} line{'s' if count != 1 else ''} ({summary})")
    result.warnings.extend(op.warnings)
    if op.record is not None:
        result.record, result.commit = op.record.id, op.record.commit
    return result


def _remove_from_file(
    workspace: Workspace,
    path: str,
    items: list[ForgetLine],
    force: bool,
    provenance: Provenance,
    result: ForgetResult,
) -> None:
    text = read_text(workspace, path)
    if text is None:
        result.warnings.append(f"{path}: gone since the preview; nothing removed there")
        return
    raw = split_lines(text)
    bare = [line_key(x) for x in raw]
    generated = provenance.generated(path, bare)
    drop: set[int] = set()
    for item in items:
        index = _find(bare, item, drop)
        if index is None:
            result.warnings.append(f"{item.citation}: changed since the preview; left as it is")
            continue
        now = ForgetLine(path, index + 1, bare[index], index in generated)
        if not now.generated and not force:
            result.refused.append(now)
            continue
        drop.add(index)
        result.removed.append(now)
    if drop:
        kept = "".join(x for i, x in enumerate(raw) if i not in drop)
        write_text(workspace, path, kept, based_on=text)


def _find(lines: list[str], item: ForgetLine, taken: set[int]) -> int | None:
    """Where ``item``'s text is now: its line, else the nearest same text within
    :data:`MOVE_WINDOW` lines."""
    at = item.line - 1
    if 0 <= at < len(lines) and lines[at] == item.text and at not in taken:
        return at
    for distance in range(1, MOVE_WINDOW + 1):
        for i in (at - distance, at + distance):
            if 0 <= i < len(lines) and lines[i] == item.text and i not in taken:
                return i
    return None
