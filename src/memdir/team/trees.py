"""The merge of two commits of a workspace's repository, made in git objects with dulwich
(docs/design.md#team-memory): never through the working tree or the person's index, so a
merge is never half made in the files, and no ``MERGE_HEAD`` ever pauses the audit trail.

A path only one side changed since the merge base takes that side's version; a path both
changed is merged by :func:`memdir.team.merge.merge_file`. The result is a merge commit by
``memdir`` whose parents are ours and theirs, so every commit of both sides — the audit
trail's included — is in the history once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dulwich.diff_tree import tree_changes
from dulwich.object_store import commit_tree_changes, tree_lookup_path
from dulwich.objects import Blob, Commit, ObjectID, Tree
from dulwich.repo import Repo

from memdir.audit.git import AUTHOR
from memdir.team.merge import Contradiction, merge_file

FILE_MODE = 0o100644


@dataclass
class TreeMerge:
    """The merged tree, the disagreements kept in it, and the paths whose merge differs from
    both sides (merged line by line)."""

    tree: ObjectID
    contradictions: list[Contradiction] = field(default_factory=list)
    merged_paths: list[str] = field(default_factory=list)


def _oid(sha: str) -> ObjectID:
    return ObjectID(sha.encode("ascii"))


def commit_of(repo: Repo, sha: str) -> Commit:
    commit = repo.object_store[_oid(sha)]
    assert isinstance(commit, Commit)
    return commit


def is_ancestor(repo: Repo, older: str, newer: str) -> bool:
    """Whether commit ``older`` is in the history of ``newer`` (or is it)."""
    if older == newer:
        return True
    return _oid(older) in _history(repo, _oid(newer), stop=_oid(older))


def merge_base(repo: Repo, ours: str, theirs: str) -> str | None:
    """The newest commit in both histories that no other such commit descends from, or None.

    Walked here, not with dulwich's ``find_merge_base``: that prunes by commit time, and
    memdir's commits often share a second (measured: it missed an ancestor two commits back).
    """
    mine = _history(repo, _oid(ours))
    found: list[ObjectID] = []
    seen: set[ObjectID] = set()
    todo = [_oid(theirs)]
    while todo:
        sha = todo.pop()
        if sha in seen:
            continue
        seen.add(sha)
        if sha in mine:
            found.append(sha)
            continue  # its own ancestors are common too, and older
        todo.extend(_parents(repo, sha))
    best = [c for c in found if not any(c != d and c in _history(repo, d) for d in found)]
    if not best:
        return None
    newest = max(best, key=lambda c: (commit_of(repo, c.decode("ascii")).commit_time, c))
    return newest.decode("ascii")


def _history(repo: Repo, start: ObjectID, stop: ObjectID | None = None) -> set[ObjectID]:
    """Every commit reachable from ``start`` (it included); the walk ends early when it meets
    ``stop``."""
    seen: set[ObjectID] = set()
    todo = [start]
    while todo:
        sha = todo.pop()
        if sha in seen:
            continue
        seen.add(sha)
        if sha == stop:
            break
        todo.extend(_parents(repo, sha))
    return seen


def _parents(repo: Repo, sha: ObjectID) -> list[ObjectID]:
    commit = repo.object_store[sha]
    assert isinstance(commit, Commit)
    return list(commit.parents)


def blob_text(repo: Repo, tree: ObjectID | None, path: str) -> str | None:
    """A file's text in ``tree`` (bytes that are not UTF-8 kept as surrogates), or None."""
    if tree is None:
        return None
    try:
        _, sha = tree_lookup_path(repo.object_store.__getitem__, tree, path.encode("utf-8"))
    except KeyError:
        return None
    blob = repo.object_store[sha]
    if not isinstance(blob, Blob):
        return None
    return blob.as_raw_string().decode("utf-8", "surrogateescape")


def changed_paths(repo: Repo, old: ObjectID | None, new: ObjectID | None) -> set[str]:
    """The paths whose blob differs between two trees."""
    out: set[str] = set()
    for change in tree_changes(repo.object_store, old, new):
        for entry in (change.old, change.new):
            if entry is not None and entry.path is not None:
                out.add(entry.path.decode("utf-8", "surrogateescape"))
    return out


def merge_commits(repo: Repo, base: str | None, ours: str, theirs: str) -> TreeMerge:
    """Merge ``theirs`` into ``ours`` from ``base`` (None: the two have no common history)."""
    store = repo.object_store
    base_tree = commit_of(repo, base).tree if base else None
    ours_tree = commit_of(repo, ours).tree
    theirs_tree = commit_of(repo, theirs).tree
    ours_changed = changed_paths(repo, base_tree, ours_tree)
    result = TreeMerge(ours_tree)
    updates: list[tuple[bytes, int | None, ObjectID | None]] = []
    for path in sorted(changed_paths(repo, base_tree, theirs_tree)):
        raw = path.encode("utf-8", "surrogateescape")
        if path not in ours_changed:
            updates.append((raw, *_entry(repo, theirs_tree, raw)))
            continue
        merged = merge_file(
            path,
            blob_text(repo, base_tree, path),
            blob_text(repo, ours_tree, path),
            blob_text(repo, theirs_tree, path),
        )
        if merged is None:
            updates.append((raw, None, None))
            continue
        result.contradictions.extend(merged.contradictions)
        blob = Blob.from_string(merged.text.encode("utf-8", "surrogateescape"))
        store.add_object(blob)
        mode = _entry(repo, ours_tree, raw)[0] or _entry(repo, theirs_tree, raw)[0]
        updates.append((raw, mode or FILE_MODE, blob.id))
        result.merged_paths.append(path)
    if updates:
        tree = store[ours_tree]
        assert isinstance(tree, Tree)
        copied = tree.copy()
        assert isinstance(copied, Tree)
        result.tree = commit_tree_changes(store, copied, updates)
    return result


def _entry(repo: Repo, tree: ObjectID, path: bytes) -> tuple[int | None, ObjectID | None]:
    try:
        mode, sha = tree_lookup_path(repo.object_store.__getitem__, tree, path)
    except KeyError:
        return None, None
    return mode, sha


def make_merge_commit(
    repo: Repo, tree: ObjectID, ours: str, theirs: str, message: str, when: int, zone: int
) -> str:
    """Store the merge commit (author and committer ``memdir``) and return its id."""
    commit = Commit()
    commit.tree = tree
    commit.parents = [ObjectID(ours.encode("ascii")), ObjectID(theirs.encode("ascii"))]
    commit.author = commit.committer = AUTHOR
    commit.author_time = commit.commit_time = when
    commit.author_timezone = commit.commit_timezone = zone
    commit.encoding = b"UTF-8"
    commit.message = message.encode("utf-8")
    repo.object_store.add_object(commit)
    return commit.id.decode("ascii")


__all__ = [
    "TreeMerge",
    "blob_text",
    "changed_paths",
    "commit_of",
    "is_ancestor",
    "make_merge_commit",
    "merge_base",
    "merge_commits",
]
