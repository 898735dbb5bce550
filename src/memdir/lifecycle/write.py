"""``memory_write``: add one fact to today's daily log or to a section of MEMORY.md.

- Daily log (``memory/YYYY-MM-DD.md``, the default): the bullet is appended with
  :func:`~memdir.workspace.layout.locked_append`; a new file starts with a ``# YYYY-MM-DD`` heading.
- MEMORY.md: the bullet goes at the end of its section's bullets (the heading is appended when
  the section is missing, in the file's language) and the file is replaced atomically; every
  other byte stays as it was.

A fact already there is not written twice: an exact match after normalising case, width,
whitespace and punctuation, or a near duplicate (Jaccard over
:func:`~memdir.text.similarity_tokens` ≥ 0.9) of a line in the same file (daily log) or section
(MEMORY.md). The duplicate check and the write happen under one cross-process lock
(:func:`memory_write_lock`), so two agents writing the same fact at once store it once.

Every write is audited (:mod:`memdir.audit`): a ``write`` record of its own, or part of the
operation of the component that called (a flush, a capture, an extraction).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import lru_cache
from typing import Any

from memdir.audit import append_text, audited, write_text
from memdir.audit.lock import workspace_lock
from memdir.errors import MemdirError, WorkspaceError
from memdir.markdown.sections import (
    content_lines,
    find_section,
    insert_bullet,
    line_ending,
    normalise_for_dedup,
    parse_sections,
)
from memdir.safety.privacy import describe_kinds
from memdir.text import jaccard, similarity_tokens
from memdir.workspace.layout import (
    MEMORY_DIR,
    MEMORY_FILE,
    SECTION_HEADINGS,
    Workspace,
)

TARGETS = ("daily", "memory")
SECTIONS = tuple(SECTION_HEADINGS["en"])
#: The longest fact accepted (characters, after normalising); longer ones are refused.
MAX_TEXT_CHARS = 2000
#: Jaccard similarity at or above which a new fact counts as a near duplicate.
NEAR_DUPLICATE = 0.9
LOCK_TIMEOUT_S = 30.0

_NEWLINES_RE = re.compile(r"\s*[\r\n\u2028\u2029\x85]+\s*")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
_BULLET_RE = re.compile(r"^[-*+](?:\s+|$)")


@dataclass(frozen=True)
class WriteResult:
    """Where a fact went, or why it was not written.

    Attributes:
        path: workspace-relative path of the file (``memory/2026-11-30.md`` or ``MEMORY.md``).
        line: 1-based line of the new bullet, or of the existing line it duplicates.
        written: False when the fact was skipped as a duplicate.
        reason: one human-readable line saying what happened.
        text: the fact as stored (one line, without the ``- `` marker).
        redacted: the kinds of secret replaced by ``[REDACTED:<kind>]``
            (:mod:`memdir.safety.privacy`).
    """

    path: str
    line: int
    written: bool
    reason: str
    text: str = ""
    redacted: tuple[str, ...] = ()

    @property
    def citation(self) -> str:
        return f"{self.path}#L{self.line}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "written": self.written,
            "reason": self.reason,
            "text": self.text,
            "citation": self.citation,
            "redacted": list(self.redacted),
        }


def normalise_memory_text(text: str) -> str:
    """The fact as one clean line: newlines collapsed to spaces, control characters dropped,
    surrounding space and a leading list marker removed, ``<!--`` escaped.

    Raises:
        MemdirError: the text is not a string, is empty, or is longer than
            :data:`MAX_TEXT_CHARS` characters.
    """
    if not isinstance(text, str):
        raise MemdirError("text must be a string")
    one_line = _NEWLINES_RE.sub(" ", text).replace("\t", " ")
    one_line = _BULLET_RE.sub("", _CONTROL_RE.sub("", one_line).strip()).strip()
    # An HTML comment would hide the fact (and whatever follows it) from a person reading the
    # rendered file, and hide later headings from the section parser: keep it visible.
    one_line = one_line.replace("<!--", "&lt;!--")
    if not one_line:
        raise MemdirError("nothing to remember: the text is empty")
    if len(one_line) > MAX_TEXT_CHARS:
        raise MemdirError(
            f"text is {len(one_line)} chars; the limit is {MAX_TEXT_CHARS}: "
            "write one short, self-contained fact"
        )
    return one_line


def check_target(target: str, section: str | None) -> None:
    """Refuse an unknown target or section, or a combination that makes no sense.

    Raises:
        MemdirError: with the values that are accepted.
    """
    if target not in TARGETS:
        raise MemdirError(f"unknown target {target!r}: choose daily or memory")
    if section is not None and section not in SECTIONS:
        raise MemdirError(f"unknown section {section!r}: choose one of {', '.join(SECTIONS)}")
    if target == "memory" and section is None:
        raise MemdirError(f"target 'memory' needs a section: one of {', '.join(SECTIONS)}")
    if target == "daily" and section is not None:
        raise MemdirError("a section applies to MEMORY.md only: use target 'memory'")


@contextlib.contextmanager
def memory_write_lock(workspace: Workspace, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """The workspace's cross-process lock for read-check-write updates of memory files
    (re-entrant: :func:`memdir.audit.lock.workspace_lock`)."""
    with workspace_lock(workspace.state_dir, timeout):
        yield


def write_memory(
    workspace: Workspace,
    text: str,
    *,
    target: str = "daily",
    section: str | None = None,
    now: datetime,
    via: str | None = None,
    redacted: Sequence[str] = (),
) -> WriteResult:
    """Append ``text`` to today's daily log, or add it to the MEMORY.md ``section``.

    Args:
        workspace: the workspace to write in.
        text: the fact; see :func:`normalise_memory_text`.
        target: ``daily`` (``memory/YYYY-MM-DD.md`` for ``now``'s date) or ``memory``.
        section: for ``memory``: ``preferences``, ``decisions``, ``lessons``, ``facts`` or
            ``todos``.
        now: the current time (its date picks the daily log).
        via: what asked for the write, for the audit record (``MCP memory_write``); part of the
            caller's operation when one is open (a flush, an extraction).
        redacted: kinds of secret the caller already replaced in ``text`` (a flush checks its
            whole reply first: :meth:`~memdir.safety.privacy.SecretGuard.redact_lines`), reported
            with those found here.

    Returns:
        Where the fact was written, or the line it duplicates.

    Raises:
        MemdirError: invalid text, target or section.
        SecretRefused: ``[privacy] secrets = "refuse"`` and the text holds a secret.
        WorkspaceError: the file cannot be written (or MEMORY.md is not valid UTF-8).
    """
    check_target(target, section)
    # Every automatic write comes through here: the secrets check is applied once, first.
    fact, found = workspace.secrets.check_fact(normalise_memory_text(text))
    kinds = [*redacted, *found]
    with audited(workspace, "write", via=via) as op:
        try:
            if op.component == "write" and via:
                op.describe(f"via {via}")
            if section is not None:
                result = _write_section(workspace, fact, section)
            else:
                result = _write_daily(workspace, fact, now.date().isoformat())
        except OSError as exc:
            raise WorkspaceError(f"cannot write memory: {exc.strerror or exc}") from exc
    if not kinds:
        return result
    note = (
        f"; redacted {describe_kinds(kinds)}: memdir does not store secrets, so the value "
        "was replaced by [REDACTED]"
    )
    return replace(result, reason=result.reason + note, redacted=tuple(kinds))


def _write_daily(workspace: Workspace, fact: str, day: str) -> WriteResult:
    rel = f"{MEMORY_DIR}/{day}.md"
    existing = _existing(workspace, rel)
    current = existing.decode("utf-8", errors="replace")
    duplicate = find_duplicate(fact, content_lines(current))
    if duplicate is not None:
        return _skipped(rel, fact, duplicate)
    eol = line_ending(current)
    payload = f"- {fact}{eol}"
    if not current.strip():
        payload = f"# {day}{eol}{eol}{payload}"
    start = append_text(workspace, rel, payload)
    line = start + payload.count("\n") - 1
    return WriteResult(rel, line, True, f"appended to the daily log {rel}", fact)


def _write_section(workspace: Workspace, fact: str, section: str) -> WriteResult:
    data = _existing(workspace, MEMORY_FILE)
    try:
        current = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorkspaceError(
            f"{MEMORY_FILE} is not valid UTF-8 (byte {exc.start}): fix it before memdir writes "
            "to it"
        ) from exc
    sections = parse_sections(current)
    found = find_section(sections, section)
    if found is not None:
        existing = content_lines(current, found.heading_line + 1, found.end)
        duplicate = find_duplicate(fact, existing)
        if duplicate is not None:
            return _skipped(MEMORY_FILE, fact, duplicate)
    bullet = f"- {fact}"
    new_text, line = insert_bullet(current, section, bullet)
    # A person may have appended or edited meanwhile: the bullet is then carried onto their
    # text (docs/design.md#files-are-the-truth) and may sit on another line.
    final = write_text(workspace, MEMORY_FILE, new_text, based_on=current)
    if final != new_text:
        line = _nearest(final.splitlines(), bullet, line)
    title = found.title if found is not None else parse_sections(new_text)[-1].title
    return WriteResult(MEMORY_FILE, line, True, f"added to {MEMORY_FILE} under ## {title}", fact)


def _nearest(lines: list[str], text: str, line: int) -> int:
    """The 1-based line holding ``text`` nearest to ``line`` (``line`` when none does)."""
    found = [i + 1 for i, x in enumerate(lines) if x == text]
    return min(found, key=lambda n: abs(n - line)) if found else line


def _existing(workspace: Workspace, rel: str) -> bytes:
    """The current bytes of a file memdir is about to write (empty when it does not exist).

    Raises:
        PathNotAllowed: it is a symlink or a special file: memdir does not write it.
    """
    try:
        return workspace.read_file(rel)
    except FileNotFoundError:
        return b""


def find_duplicate(fact: str, lines: list[tuple[int, str]]) -> tuple[int, float] | None:
    """The first line that ``fact`` duplicates, as (1-based line, similarity); an exact match
    (after :func:`~memdir.markdown.sections.normalise_for_dedup`) has similarity 1.0.

    Args:
        fact: the new fact.
        lines: candidate lines as (0-based index, text), e.g. from
            :func:`~memdir.markdown.sections.content_lines`.
    """
    norm, tokens = _dedup_key(fact)
    if norm:
        for index, existing in lines:
            if _dedup_key(existing)[0] == norm:
                return index + 1, 1.0
    if not tokens:
        return None
    for index, existing in lines:
        other = _dedup_key(existing)[1]
        small, large = sorted((len(tokens), len(other)))
        # Jaccard ≥ t needs small/large ≥ t: skip the token sets that cannot reach it.
        if not small or small < NEAR_DUPLICATE * large:
            continue
        score = jaccard(tokens, other)
        if score >= NEAR_DUPLICATE:
            return index + 1, score
    return None


def _skipped(path: str, fact: str, duplicate: tuple[int, float]) -> WriteResult:
    line, similarity = duplicate
    if similarity >= 1.0:
        reason = f"skipped: {path} line {line} already says this"
    else:
        reason = f"skipped: near duplicate of {path} line {line} (similarity {similarity:.2f})"
    return WriteResult(path, line, False, reason, fact)


@lru_cache(maxsize=8192)
def _dedup_key(text: str) -> tuple[str, frozenset[str]]:
    return normalise_for_dedup(text), similarity_tokens(text)
