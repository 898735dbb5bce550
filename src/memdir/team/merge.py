"""How two hosts' versions of one memory file become one (docs/design.md#team-memory), line by
line and never with conflict markers.

Every file is merged the same way, three-way from the version both sides started from
(``base``): the other side's change is carried onto ours — the lines it added placed after the
line they followed in ``base``, the lines it removed removed where ours still has them — and a
line it added that ours already holds is not added twice (two hosts that wrote the same fact
keep it once). Nothing either side added is lost, so append-only files (daily logs, session
archives) come out as the union of both sides' lines in order.

MEMORY.md is merged section by section (``## Decisions``, ``## 项目事实`` …, matched by their
heading), so the other side's bullets land in their own section even when the two files were
made apart (no common base). Where both sides changed the same lines of ``base`` differently, a
real disagreement, both results are kept and the pair is returned as a :class:`Contradiction`,
which ``memdir review`` lists until a person resolves it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from memdir.audit.merge import anchor, join_lines, line_key, line_mapping
from memdir.markdown.sections import parse_sections, split_lines
from memdir.workspace.layout import MEMORY_FILE


@dataclass(frozen=True)
class Contradiction:
    """Lines of ``base`` that both sides changed, differently: both results are in the file."""

    path: str
    section: str
    base: tuple[str, ...]
    ours: tuple[str, ...]
    theirs: tuple[str, ...]


@dataclass
class Merged:
    """One file's merge: its text and the disagreements kept in it."""

    text: str
    contradictions: list[Contradiction] = field(default_factory=list)


def merge_file(path: str, base: str | None, ours: str | None, theirs: str | None) -> Merged | None:
    """The merge of one file (None: deleted). A file one side deleted and the other changed
    is kept with the change (nothing a person wrote is dropped by a sync)."""
    if ours == theirs:
        return None if ours is None else Merged(ours)
    if theirs is None:
        return Merged(ours) if ours is not None and ours != base else None
    if ours is None:
        return Merged(theirs) if theirs != base or base is None else None
    if base == ours:
        return Merged(theirs)
    if base == theirs:
        return Merged(ours)
    if path == MEMORY_FILE:
        return _merge_sections(path, base or "", ours, theirs)
    merged = Merged("")
    merged.text = union_merge(base or "", ours, theirs, merged, path, "")
    return merged


def union_merge(
    base: str, ours: str, theirs: str, into: Merged | None = None, path: str = "", section: str = ""
) -> str:
    """``theirs``' change of ``base`` carried onto ``ours`` (see the module docstring); both
    sides' changes of the same base lines are added to ``into.contradictions``."""
    old, mine, other = split_lines(base), split_lines(ours), split_lines(theirs)
    old_keys = [line_key(x) for x in old]
    mine_keys = [line_key(x) for x in mine]
    mapping = line_mapping(old_keys, mine_keys)
    have = {k for k in mine_keys if k.strip()}
    deleted: set[int] = set()
    inserts: dict[int, list[str]] = defaultdict(list)
    matcher = SequenceMatcher(None, old_keys, [line_key(x) for x in other], False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        deleted.update(mapping[i] for i in range(i1, i2) if i in mapping)
        added = [line for line in other[j1:j2] if line_key(line) not in have]
        if not any(line_key(line).strip() for line in added):
            added = []  # only blank lines left: their text is here already
        if added:
            inserts[anchor(mapping, i1, i2, len(old), len(mine))].extend(added)
            have.update(k for k in (line_key(x) for x in added) if k.strip())
        gone_here = [i for i in range(i1, i2) if i not in mapping and old_keys[i].strip()]
        if into is not None and tag == "replace" and gone_here and added:
            ours_now = _replacement(old_keys, mine_keys, i1, i2)
            if ours_now:
                into.contradictions.append(
                    Contradiction(
                        path,
                        section,
                        tuple(old_keys[i] for i in gone_here),
                        tuple(ours_now),
                        tuple(line_key(x) for x in added if line_key(x).strip()),
                    )
                )
    out: list[str] = []
    for k in range(len(mine) + 1):
        out.extend(inserts.get(k, ()))
        if k < len(mine) and k not in deleted:
            out.append(mine[k])
    return join_lines(out, "\r\n" if "\r\n" in ours else "\n")


def _replacement(old_keys: list[str], mine_keys: list[str], i1: int, i2: int) -> list[str]:
    """The non-blank lines ours put in place of ``base[i1:i2]``, if ours replaced them."""
    out: list[str] = []
    matcher = SequenceMatcher(None, old_keys, mine_keys, False)
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag == "replace" and a1 < i2 and i1 < a2:
            out.extend(k for k in mine_keys[b1:b2] if k.strip())
    return out


def _blocks(text: str) -> list[tuple[str, str]]:
    """``text`` cut at its ``## `` sections: (heading key, text), the part before the first
    section keyed ``""``."""
    lines = split_lines(text)
    sections = parse_sections(text)
    if not sections:
        return [("", text)]
    out = [("", "".join(lines[: sections[0].heading_line]))]
    for n, section in enumerate(sections):
        end = sections[n + 1].heading_line if n + 1 < len(sections) else len(lines)
        key = section.key or section.title.strip().casefold()
        out.append((key, "".join(lines[section.heading_line : end])))
    return out


def _merge_sections(path: str, base: str, ours: str, theirs: str) -> Merged:
    merged = Merged("")
    base_of = dict(_blocks(base))
    theirs_of = dict(_blocks(theirs))
    mine = _blocks(ours)
    keys = {key for key, _ in mine}
    parts: list[str] = []
    for key, text in mine:
        if key in theirs_of:
            text = union_merge(base_of.get(key, ""), text, theirs_of[key], merged, path, key)
        elif key in base_of and base_of[key] != text:
            pass  # they removed a section ours changed: ours stays
        parts.append(text)
    for key, text in _blocks(theirs):
        if key not in keys and key not in base_of:  # a section only they have
            if parts and not parts[-1].endswith("\n"):
                parts[-1] += "\n"
            parts.append(text)
    merged.text = "".join(parts)
    return merged


__all__ = ["Contradiction", "Merged", "merge_file", "union_merge"]
