"""Carry one change made to a file onto another version of that file, line by line.

memdir changes a working file from ``before`` to ``after``. The audit commit must hold that
change and nothing else, yet the working file may also hold a person's uncommitted edits. So
the commit is built from the committed version (``base``, HEAD's blob) with memdir's change
carried onto it: :func:`carry_change`. The same function carries the change onto a person's
staged version in their index, and undoes a change (``carry_change(after, before, current)``).

The rule that makes it safe: the result is ``base``'s lines, minus the lines memdir removed
(where ``base`` has them), plus the lines memdir added, placed after the nearest line they
followed in ``before`` that ``base`` also has. A line a person added or changed without
committing it is never copied in, because only lines memdir added are inserted.
"""

from __future__ import annotations

from collections import defaultdict
from difflib import SequenceMatcher

from memdir.markdown.sections import split_lines


def line_key(line: str) -> str:
    """A line without its terminator: how lines are compared."""
    return line.rstrip("\r\n")


def changed_lines(before: str, after: str) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """The lines a change removed and added, as (1-based line number, text without terminator);
    removed lines are numbered in ``before``, added ones in ``after``."""
    old, new = split_lines(before), split_lines(after)
    removed: list[tuple[int, str]] = []
    added: list[tuple[int, str]] = []
    matcher = SequenceMatcher(None, [line_key(x) for x in old], [line_key(x) for x in new], False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        removed.extend((i + 1, line_key(old[i])) for i in range(i1, i2))
        added.extend((j + 1, line_key(new[j])) for j in range(j1, j2))
    return removed, added


def carry_change(before: str, after: str, base: str) -> str:
    """Apply the change ``before`` → ``after`` to ``base`` (see the module docstring).

    Returns ``after`` when ``base`` equals ``before``.
    """
    if base == before:
        return after
    old, new, target = split_lines(before), split_lines(after), split_lines(base)
    old_keys = [line_key(x) for x in old]
    mapping = line_mapping(old_keys, [line_key(x) for x in target])
    deleted: set[int] = set()
    inserts: dict[int, list[str]] = defaultdict(list)
    matcher = SequenceMatcher(None, old_keys, [line_key(x) for x in new], False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        deleted.update(mapping[i] for i in range(i1, i2) if i in mapping)
        if j2 > j1:
            inserts[anchor(mapping, i1, i2, len(old), len(target))].extend(new[j1:j2])
    out: list[str] = []
    for k in range(len(target) + 1):
        out.extend(inserts.get(k, ()))
        if k < len(target) and k not in deleted:
            out.append(target[k])
    return join_lines(out, _eol(before + after + base))


def line_mapping(old_keys: list[str], new_keys: list[str]) -> dict[int, int]:
    """Each line of ``old_keys`` that ``new_keys`` kept in the same order → its index there."""
    mapping: dict[int, int] = {}
    for block in SequenceMatcher(None, old_keys, new_keys, False).get_matching_blocks():
        for k in range(block.size):
            mapping[block.a + k] = block.b + k
    return mapping


def anchor(mapping: dict[int, int], i1: int, i2: int, n_old: int, n_target: int) -> int:
    """Where in the target (``mapping``'s values) lines inserted at ``old[i1:i2]`` go: after
    the nearest earlier line the target has, else before the nearest later one, else at the
    end."""
    for i in range(i1 - 1, -1, -1):
        if i in mapping:
            return mapping[i] + 1
    for i in range(i2, n_old):
        if i in mapping:
            return mapping[i]
    return n_target


def _eol(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def join_lines(lines: list[str], eol: str) -> str:
    """Join lines, giving a terminator to any line that lost its place at the end."""
    fixed = [
        line if i == len(lines) - 1 or line.endswith("\n") else line + eol
        for i, line in enumerate(lines)
    ]
    return "".join(fixed)
