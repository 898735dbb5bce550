"""Moving the workspace to a merged (or fetched) commit: the branch, the files, the person's
index — in that order, and finished after a kill (docs/design.md#team-memory).

The plan (every changed file's text before and the text it gets) is written first to
``.memdir/team/pending.json``; then the branch moves by compare-and-swap
(:meth:`memdir.audit.git.GitTrail.advance`), each file is replaced while it still holds what
the plan read (:func:`memdir.audit.rewrite.rewrite`: a person's edit made meanwhile gets the
change carried onto it), and the plan is removed. A process killed after the branch moved
leaves the plan, and the next sync finishes it: a file still as it was gets its new text, a
file that already has it is left, a file a person changed since gets the change carried onto
their text. Killed before the branch moved, the plan is dropped: nothing was published.

A file a person changed and did not commit keeps their change: its new text is the merge of
their text with the new commit's (:func:`memdir.team.merge.merge_file`), and the change stays
uncommitted. Nothing is written outside regular files of the workspace (no symlink, nothing
under ``.git`` or ``.memdir``).
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from dulwich.object_store import tree_lookup_path
from dulwich.objects import ObjectID
from dulwich.refs import HEADREF
from dulwich.repo import Repo

from memdir.audit.git import GitTrail
from memdir.audit.merge import carry_change
from memdir.audit.rewrite import read_text, rewrite
from memdir.errors import MemdirError
from memdir.team.merge import merge_file
from memdir.team.trees import blob_text, changed_paths, commit_of, is_ancestor
from memdir.workspace.fileio import atomic_write
from memdir.workspace.layout import Workspace

PLAN_FILE = "team/pending.json"
#: Regular files only (git's modes of a file and an executable file).
FILE_MODES = (0o100644, 0o100755)


@dataclass
class Plan:
    """Move the branch from ``old`` to ``new`` and each file from its text to its target."""

    old: str
    new: str
    #: workspace path → (text before, text after; None: absent).
    files: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    #: workspace path → (old blob, new blob), for the person's index.
    blobs: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)


def plan_move(repo: Repo, workspace: Workspace, old: str, new: str) -> Plan:
    """What moving from commit ``old`` to ``new`` does to the working files."""
    plan = Plan(old, new)
    old_tree, new_tree = commit_of(repo, old).tree, commit_of(repo, new).tree
    for rel in sorted(changed_paths(repo, old_tree, new_tree)):
        if not _ours_to_write(repo, new_tree, old_tree, rel):
            continue
        before = blob_text(repo, old_tree, rel)
        after = blob_text(repo, new_tree, rel)
        try:
            working = read_text(workspace, rel)
        except MemdirError:
            continue  # a symlink or a special file in the way: not memdir's to touch
        if working != before:  # the person's uncommitted change stays theirs
            merged = merge_file(rel, before, working, after)
            after = None if merged is None else merged.text
        plan.files[rel] = (working, after)
        plan.blobs[rel] = (_sha(repo, old_tree, rel), _sha(repo, new_tree, rel))
    return plan


def _ours_to_write(repo: Repo, new_tree: ObjectID, old_tree: ObjectID, rel: str) -> bool:
    top = rel.split("/", 1)[0]
    if top in (".git", ".memdir"):
        return False
    for tree in (new_tree, old_tree):
        try:
            mode, _ = tree_lookup_path(repo.object_store.__getitem__, tree, rel.encode())
        except KeyError:
            continue
        if mode not in FILE_MODES:
            return False
    return True


def _sha(repo: Repo, tree: ObjectID, rel: str) -> str | None:
    try:
        _, sha = tree_lookup_path(repo.object_store.__getitem__, tree, rel.encode("utf-8"))
    except KeyError:
        return None
    return sha.decode("ascii")


def apply_plan(workspace: Workspace, trail: GitTrail, plan: Plan) -> bool:
    """Carry out ``plan`` (under the workspace write lock). Returns False when the branch was
    no longer at ``plan.old`` (nothing changed)."""
    _save(workspace, plan)
    index = {rel: (a, b) for rel, (a, b) in plan.blobs.items() if b is not None}
    if not trail.advance(plan.old, plan.new, index):
        _clear(workspace)
        return False
    write_files(workspace, plan)
    _clear(workspace)
    return True


def write_files(workspace: Workspace, plan: Plan) -> None:
    """Bring each file of the plan to its target (idempotent: see the module docstring)."""
    for rel, (before, after) in plan.files.items():
        try:
            now = read_text(workspace, rel)
        except MemdirError:
            continue
        if now == after:
            continue
        if after is None:
            if now == before and now is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(workspace.write_path(rel))
            continue
        target = after if now == before else carry_change(before or "", after, now or "")
        rewrite(workspace, rel, now, target)


def finish_interrupted(workspace: Workspace, repo: Repo) -> str | None:
    """Finish or drop the plan a killed sync left (under the workspace write lock); returns
    what was done, or None when there was none."""
    plan = load_plan(workspace)
    if plan is None:
        return None
    _, head = repo.refs.follow(HEADREF)
    current = head.decode("ascii") if head is not None else None
    if current is not None and current != plan.old and is_ancestor(repo, plan.new, current):
        write_files(workspace, plan)
        _clear(workspace)
        return f"finished moving the files to {plan.new[:10]} (a sync was interrupted)"
    _clear(workspace)
    return "dropped an interrupted sync that had published nothing"


def load_plan(workspace: Workspace) -> Plan | None:
    path = workspace.state_dir / PLAN_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    files = {k: (v[0], v[1]) for k, v in data.get("files", {}).items()}
    blobs = {k: (v[0], v[1]) for k, v in data.get("blobs", {}).items()}
    return Plan(str(data["old"]), str(data["new"]), files, blobs)


def _save(workspace: Workspace, plan: Plan) -> None:
    path: Path = workspace.state_dir / PLAN_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"old": plan.old, "new": plan.new, "files": plan.files, "blobs": plan.blobs}
    # ASCII: a byte that is not UTF-8 (kept as a surrogate) survives as an escape.
    atomic_write(path, json.dumps(data), tmp_dir=workspace.tmp_dir)


def _clear(workspace: Workspace) -> None:
    with contextlib.suppress(FileNotFoundError):
        (workspace.state_dir / PLAN_FILE).unlink()


__all__ = ["PLAN_FILE", "Plan", "apply_plan", "finish_interrupted", "load_plan", "plan_move"]
