"""Promotion: from recall entries to lines of MEMORY.md, checked against the live daily notes.

For each selected entry:

1. Re-read the live daily note. The recorded snippet must still be there as the same text from
   a line start to a line end (a snippet cut at the snippet limit may end mid-line): at its
   recorded lines, or elsewhere in the note (moved; the occurrence nearest to the recorded lines
   wins). A snippet that changed or whose note is gone is not promoted.
2. Lines of generated dreaming blocks and promotion markers are never promoted.
3. The snippet's lines are cut into blocks (a list item with its continuation lines, or a
   paragraph; headings dropped). When the entry has concept tags, only the blocks containing one
   are kept: the part of the chunk the searches were about.
4. A block that ``memdir forget`` removed (its :func:`forget_key` is in the recall store's
   forgotten set) is dropped: forgetting is for good.
5. A block that reads like a prompt injection (:func:`memdir.safety.untrusted.looks_like_injection`,
   the check auto-capture and the memory flush apply) is refused: never promoted, listed in
   the outcome's ``refused`` and reported by the run; an entry left with nothing but refused
   blocks is "refused" (and is considered again by the next run, reported again).
6. A block already in MEMORY.md (Jaccard ≥ 0.9 over :func:`memdir.text.similarity_tokens` with
   any line there) or taken earlier in the run is dropped; an entry left with nothing to add is
   "nothing new" (and counts as promoted: its content is in MEMORY.md or is generated text).
7. Each remaining block becomes ``- text <!-- memdir:promoted PATH#La-Lb key=KEY -->`` in the
   block of the day (:mod:`memdir.markdown.generated`), then the budget
   (:mod:`memdir.dreaming.budget`) is enforced. Its text has every secret redacted
   (:mod:`memdir.safety.privacy`), found on the whole note: a block inside a private key is redacted
   even though its lines alone look like nothing.

Writing MEMORY.md: under the workspace's memory write lock (the one ``memory_write`` takes,
:func:`memdir.lifecycle.write.memory_write_lock`), read → modify → check the file did not change
since the read (an editor takes no lock; on a change, plan again on the new text, up to
:data:`WRITE_ATTEMPTS` times) → :func:`memdir.audit.write_text` (an atomic replace, recorded in
the audit trail as part of the ``dream`` operation), which carries the change onto a person's
text written in the last moment. Bytes outside the generated blocks are never changed.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from memdir.audit import append_text, audited, line_hash, write_text
from memdir.dreaming.budget import MEMORY_BUDGET_CHARS, enforce_budget
from memdir.dreaming.store import RecallEntry, mentioned_terms
from memdir.errors import PathNotAllowed, WorkspaceError
from memdir.markdown.generated import (
    KEY_RE,
    generated_indexes,
    promoted_keys,
    split_lines,
)
from memdir.markdown.generated import append_entries as append_to_block
from memdir.safety.untrusted import looks_like_injection
from memdir.text import jaccard, similarity_tokens, stem
from memdir.workspace.fileio import read_regular_file
from memdir.workspace.layout import DREAMS_FILE, MEMORY_FILE, Workspace

DEDUPE_JACCARD = 0.9
WRITE_ATTEMPTS = 5

_LIST_ITEM_RE = re.compile(r"^ ?(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|$)")
_HEADING_RE = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
_COMMENT_LINE_RE = re.compile(r"^\s*<!--.*-->\s*$")
_MARKER_RE = re.compile(r"<!--\s*memdir:")
#: Promotion statuses after which an entry counts as promoted (its content is in MEMORY.md).
DONE_STATUSES = frozenset({"promoted", "nothing new", "already promoted"})


@dataclass(frozen=True)
class NoteBlock:
    """A list item or paragraph of a daily note, as one line of text."""

    path: str
    start_line: int
    end_line: int
    text: str


@dataclass
class Outcome:
    """What happened (or, in a preview, would happen) to one selected entry."""

    key: str
    # promoted | nothing new | already promoted | changed | vanished | over budget | refused
    status: str
    path: str
    start_line: int
    end_line: int
    moved: bool = False
    lines: list[str] = field(default_factory=list)  # the MEMORY.md lines added
    refused: list[NoteBlock] = field(default_factory=list)  # blocks that read like an injection

    def to_dict(self) -> dict[str, object]:
        return {
            "key": self.key,
            "status": self.status,
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "moved": self.moved,
            "lines": self.lines,
            "refused": [
                {"start_line": b.start_line, "end_line": b.end_line, "text": b.text}
                for b in self.refused
            ],
        }


@dataclass
class PromotionResult:
    """The outcomes and what happened to MEMORY.md."""

    outcomes: list[Outcome]
    evicted: list[str]
    chars_before: int
    chars_after: int
    over_budget: bool
    person_chars: int
    written: bool


# -- reading the live note ------------------------------------------------------------------


def read_note(path: Path) -> list[str] | None:
    """The lines of a note as the chunker sees them (no BOM, no ``\\r``); None when missing."""
    try:
        data = read_regular_file(path)
    except (FileNotFoundError, NotADirectoryError, PathNotAllowed):
        return None
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def locate_snippet(
    snippet: str, lines: Sequence[str], start_line: int, *, truncated: bool
) -> tuple[int, int] | None:
    """The 1-based line range where ``snippet`` is in ``lines``, nearest to ``start_line``.

    The snippet must start at a line start and, unless ``truncated``, end at a line end.
    """
    if not snippet.strip():
        return None
    text = "\n".join(lines)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    best: tuple[int, int, int] | None = None
    pos = text.find(snippet)
    while pos != -1:
        end = pos + len(snippet)
        at_start = pos == 0 or text[pos - 1] == "\n"
        at_end = end == len(text) or text[end] == "\n"
        if at_start and (at_end or truncated):
            first = bisect.bisect_right(starts, pos)
            last = bisect.bisect_right(starts, end - 1)
            distance = abs(first - start_line)
            if best is None or distance < best[0]:
                best = (distance, first, last)
            if distance == 0:
                break
        pos = text.find(snippet, pos + 1)
    return None if best is None else (best[1], best[2])


def note_blocks(
    path: str, lines: Sequence[str], first: int, last: int, *, skip: set[int] | None = None
) -> list[NoteBlock]:
    """The blocks of lines ``first``..``last`` (1-based): list items with their continuation
    lines, paragraphs; headings, blank lines, comment lines and ``skip`` (0-based) end a block."""
    skip = skip or set()
    blocks: list[NoteBlock] = []
    current: list[tuple[int, str]] = []

    def close() -> None:
        if current:
            text = block_text([line for _, line in current])
            if text:
                blocks.append(NoteBlock(path, current[0][0], current[-1][0], text))
            current.clear()

    for number in range(max(1, first), min(last, len(lines)) + 1):
        line = lines[number - 1]
        if (
            number - 1 in skip
            or not line.strip()
            or _HEADING_RE.match(line)
            or _COMMENT_LINE_RE.match(line)
            or _MARKER_RE.search(line)
        ):
            close()
            continue
        if _LIST_ITEM_RE.match(line):
            close()
        current.append((number, line))
    close()
    return blocks


def block_text(lines: Sequence[str]) -> str:
    """One line of text: list marker dropped, whitespace collapsed, comment markers defused."""
    if not lines:
        return ""
    first = _LIST_ITEM_RE.sub("", lines[0], count=1)
    text = " ".join(" ".join(part.split()) for part in (first, *lines[1:]))
    text = " ".join(text.split())
    return text.replace("<!--", "&lt;!--").replace("-->", "--&gt;")


def render_entry(text: str, path: str, start_line: int, end_line: int, key: str) -> str:
    """The MEMORY.md line of one promoted block."""
    return f"- {text} <!-- memdir:promoted {path}#L{start_line}-L{end_line} key={key} -->"


# -- planning and writing ---------------------------------------------------------------------


def plan_promotions(
    workspace: Workspace,
    memory_text: str,
    entries: Sequence[RecallEntry],
    *,
    snippet_chars: int,
    forgotten: frozenset[str] = frozenset(),
) -> tuple[list[Outcome], list[str]]:
    """Decide the outcome of each entry against ``memory_text``; return them and the new lines.
    Blocks whose :func:`forget_key` is in ``forgotten`` are never promoted."""
    done = promoted_keys(memory_text)
    seen = [similarity_tokens(_plain(line)) for line in split_lines(memory_text)]
    seen = [tokens for tokens in seen if tokens]
    outcomes: list[Outcome] = []
    new_lines: list[str] = []
    for entry in entries:
        outcome = Outcome(entry.key, "", entry.path, entry.start_line, entry.end_line)
        outcomes.append(outcome)
        if entry.key in done:
            outcome.status = "already promoted"
            continue
        try:
            lines = read_note(workspace.resolve_memory_path(entry.path))
        except PathNotAllowed:
            lines = None
        if lines is None:
            outcome.status = "vanished"
            continue
        truncated = len(entry.snippet) >= snippet_chars
        found = locate_snippet(entry.snippet, lines, entry.start_line, truncated=truncated)
        if found is None:
            outcome.status = "changed"
            continue
        outcome.start_line, outcome.end_line = found
        outcome.moved = found != (entry.start_line, entry.end_line)
        blocks = note_blocks(entry.path, lines, *found, skip=generated_indexes(lines))
        # Secrets are found on the whole note, not block by block: a snippet may start inside a
        # private key, whose body lines say nothing alone. MEMORY.md gets no secret either.
        clean = [line for line, _ in workspace.secrets.redact_lines(lines)]
        if entry.tags:
            terms = [stem(tag) for tag in entry.tags]  # as query_terms gave them
            about = [b for b in blocks if mentioned_terms(b.text, terms)]
            blocks = about or blocks
        for block in blocks:
            if forgotten and forget_key(block.text) in forgotten:
                continue
            text = block_text(clean[block.start_line - 1 : block.end_line])
            if looks_like_injection(text):
                outcome.refused.append(replace(block, text=text))  # reported: no secret in it
                continue
            tokens = similarity_tokens(text)
            if not tokens or any(jaccard(tokens, other) >= DEDUPE_JACCARD for other in seen):
                continue
            seen.append(tokens)
            line = render_entry(text, block.path, block.start_line, block.end_line, entry.key)
            outcome.lines.append(line)
            new_lines.append(line)
        if outcome.lines:
            outcome.status = "promoted"
        else:
            outcome.status = "refused" if outcome.refused else "nothing new"
    return outcomes, new_lines


def promote(
    workspace: Workspace,
    entries: Sequence[RecallEntry],
    *,
    day: str,
    apply: bool,
    snippet_chars: int = 700,
    budget: int = MEMORY_BUDGET_CHARS,
    forgotten: frozenset[str] = frozenset(),
) -> PromotionResult:
    """Plan the promotion of ``entries`` into MEMORY.md and, with ``apply``, write it (see the
    module docstring). A preview reads the same files and writes nothing.

    Raises:
        WorkspaceError: MEMORY.md is not UTF-8, the lock is held too long, or the file kept
            changing under us.
    """
    if not apply:
        return _plan_and_write(workspace, entries, day, False, snippet_chars, budget, forgotten)
    with audited(workspace, "dream"):
        return _plan_and_write(workspace, entries, day, True, snippet_chars, budget, forgotten)


def _plan_and_write(
    workspace: Workspace,
    entries: Sequence[RecallEntry],
    day: str,
    apply: bool,
    snippet_chars: int,
    budget: int,
    forgotten: frozenset[str],
) -> PromotionResult:
    memory = workspace.root / MEMORY_FILE
    for attempt in range(WRITE_ATTEMPTS):
        before = _read_bytes(workspace, MEMORY_FILE)
        text = _decode(before, memory)
        outcomes, new_lines = plan_promotions(
            workspace, text, entries, snippet_chars=snippet_chars, forgotten=forgotten
        )
        trimmed = enforce_budget(append_to_block(text, day, new_lines), budget)
        evicted_now = set(trimmed.evicted)
        for outcome in outcomes:
            kept = [line for line in outcome.lines if line not in evicted_now]
            if outcome.status == "promoted" and not kept:
                outcome.status = "over budget"
            outcome.lines = kept
        added = set(new_lines)
        result = PromotionResult(
            outcomes,
            [line for line in trimmed.evicted if line not in added],
            len(text),
            len(trimmed.text),
            trimmed.over_budget,
            trimmed.person_chars,
            written=False,
        )
        if not apply or trimmed.text == text:
            return result
        last = attempt == WRITE_ATTEMPTS - 1
        if not last and _read_bytes(workspace, MEMORY_FILE) != before:
            continue  # written behind our back (an editor takes no lock): plan again
        try:
            # Changed since the read (a person's ``echo >>`` in the last moment, or a file that
            # keeps changing): the promotions and evictions are carried onto the person's text
            # (docs/design.md#files-are-the-truth).
            write_text(workspace, MEMORY_FILE, trimmed.text, based_on=text)
        except OSError as exc:
            raise WorkspaceError(f"cannot write {memory}: {exc.strerror or exc}") from exc
        result.written = True
        return result
    raise AssertionError("unreachable: the last attempt writes")


def append_diary(workspace: Workspace, entry: str) -> Path:
    """Append one entry to ``DREAMS.md`` (:func:`memdir.audit.append_text`: part of the
    ``dream`` operation when one is open).

    Raises:
        PathNotAllowed: ``DREAMS.md`` is a symlink or a special file.
    """
    path = workspace.write_path(DREAMS_FILE)
    header = "" if path.exists() else "# Dream diary\n\nWritten by `memdir dream --diary`.\n\n"
    try:
        with audited(workspace, "dream"):
            append_text(workspace, DREAMS_FILE, header + entry)
    except OSError as exc:
        raise WorkspaceError(f"cannot write {path}: {exc.strerror or exc}") from exc
    return path


def diary_entry(now: datetime, result: PromotionResult, budget: int) -> str:
    """A plain summary of an applied run for DREAMS.md (no LLM involved)."""
    out = [f"## {now:%Y-%m-%d %H:%M}", ""]
    promoted = [o for o in result.outcomes if o.status == "promoted"]
    if promoted:
        out.append(f"Promoted {len(promoted)} {'entry' if len(promoted) == 1 else 'entries'}:")
        for outcome in promoted:
            for line in outcome.lines:
                text, _, marker = line.removeprefix("- ").partition(" <!-- memdir:promoted ")
                out.append(f"- {text} ({marker.split(' ', 1)[0]})")
    if result.evicted:
        out.append(
            f"Evicted {len(result.evicted)} older promoted line(s) to keep MEMORY.md within "
            f"{budget:,} chars."
        )
    return "\n".join(out) + "\n\n"


def _read_bytes(workspace: Workspace, rel: str) -> bytes | None:
    try:
        return workspace.read_file(rel)
    except FileNotFoundError:
        return None


def _decode(data: bytes | None, path: Path) -> str:
    if data is None:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorkspaceError(
            f"{path} is not valid UTF-8 (byte {exc.start}); dreaming will not rewrite it"
        ) from exc


def plain_text(line: str) -> str:
    """A memory line's words: without promotion marker, list marker and outer spaces (how the
    recall store's snippets hold it)."""
    return _plain(line).strip()


def forget_key(line: str) -> str:
    """The key by which a forgotten line is recognised wherever it turns up again: a hash of
    its text without promotion marker, list marker, case or runs of spaces (a daily-log bullet
    and its promoted MEMORY.md line have the same key)."""
    text = block_text([_plain(line)]).replace("&lt;!--", "<!--").replace("--&gt;", "-->")
    return line_hash(" ".join(text.casefold().split()))


def _plain(line: str) -> str:
    """A MEMORY.md line without its promotion marker and list marker, for deduplication;
    headings and comment lines give nothing."""
    if _HEADING_RE.match(line) or _COMMENT_LINE_RE.match(line):
        return ""
    return _LIST_ITEM_RE.sub("", KEY_RE.sub("", line.strip()), count=1)


__all__ = [
    "DEDUPE_JACCARD",
    "DONE_STATUSES",
    "NoteBlock",
    "Outcome",
    "PromotionResult",
    "append_diary",
    "block_text",
    "diary_entry",
    "forget_key",
    "locate_snippet",
    "note_blocks",
    "plain_text",
    "plan_promotions",
    "promote",
    "read_note",
    "render_entry",
]
