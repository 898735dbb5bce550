"""The files a watcher saw change, looked at one by one (docs/design.md#index, "Freshness").

A file watcher knows which files changed; looking at those few instead of every file of the
vault (~150 ms at 10,000 files) makes its syncs, and a search while a sync is pending, cost
what the change costs. :func:`file_entry` says what
:meth:`~memdir.workspace.layout.Workspace.iter_files` would list for one path — by the same rules:
no symlink on the way, no hidden folder, names in UTF-8, at most
:data:`~memdir.workspace.filewalk.MAX_FOLDER_DEPTH` folders deep, regular ``.md`` files under
MEMORY.md, ``memory/``, ``skills/`` and the extra paths (tests compare the two over messy trees).
:func:`scan_paths` turns a set of changed paths into the same :class:`DirtyState` a full look
gives for them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from memdir.index.base import IndexBackend
from memdir.index.sync import DirtyState
from memdir.workspace.filewalk import MAX_FOLDER_DEPTH, ignore_skipped, regular_md_stat
from memdir.workspace.layout import (
    MEMORY_DIR,
    MEMORY_FILE,
    SKILLS_DIR,
    FileEntry,
    Workspace,
    is_within,
)


def file_entry(workspace: Workspace, location: str) -> FileEntry | None:
    """The entry :meth:`Workspace.iter_files` gives for the file at ``location`` (an absolute
    path), or None when it would not list it (gone, not Markdown, not a regular file, a symlink
    or hidden folder on the way, outside every indexed place)."""
    path = Path(os.path.abspath(location))
    root = workspace.root
    if is_within(path, root) and path != root:
        parts = path.relative_to(root).parts
        rel = "/".join(parts)
        if parts == (MEMORY_FILE,):
            st = regular_md_stat(str(path), MEMORY_FILE, ignore_skipped)
            if st is not None:
                return FileEntry(rel, str(path), "memory", st.st_mtime_ns, st.st_size)
        elif parts[0] in (MEMORY_DIR, SKILLS_DIR) and _walkable(root / parts[0], parts[1:]):
            st = regular_md_stat(str(path), rel, ignore_skipped)
            if st is not None:
                return FileEntry(rel, str(path), "memory", st.st_mtime_ns, st.st_size)
    for extra in workspace.extra_paths:
        if not is_within(path, extra):
            continue
        inside = path.relative_to(extra).parts
        if inside and not _walkable(extra, inside):
            continue
        st = regular_md_stat(str(path), str(path), ignore_skipped)
        if st is not None:
            shown = workspace.display_path(path)
            return FileEntry(shown, str(path), "extra", st.st_mtime_ns, st.st_size)
    return None


def _walkable(base: Path, below: tuple[str, ...]) -> bool:
    """Whether the walk from the folder ``base`` reaches the file ``base/below...``: ``base``
    and every folder on the way real folders, not symlinks, not hidden; every name UTF-8; the
    file's folder at most :data:`MAX_FOLDER_DEPTH` below ``base``."""
    if not below or len(below) - 1 > MAX_FOLDER_DEPTH:
        return False
    try:
        for name in below:
            name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    if any(name.startswith(".") for name in below[:-1]):
        return False
    folders = [base]
    for name in below[:-1]:
        folders.append(folders[-1] / name)
    return all(folder.is_dir() and not folder.is_symlink() for folder in folders)


def scan_paths(store: IndexBackend, workspace: Workspace, locations: Iterable[str]) -> DirtyState:
    """What a full look (:func:`~memdir.index.sync.scan_dirty`) finds among these files: the
    ones added or changed since the index saw them, and the indexed ones now gone or no longer
    indexable. Files not named here are not looked at."""
    entries: dict[str, FileEntry] = {}
    names: set[str] = set()
    for location in locations:
        entry = file_entry(workspace, location)
        names.add(workspace.display_path(Path(os.path.abspath(location))))
        if entry is not None:
            entries[entry.path] = entry
    names.update(entries)
    known = store.file_rows(sorted(names))
    changed = [
        entry
        for path, entry in sorted(entries.items())
        if (row := known.get(path)) is None
        or (row.mtime_ns, row.size) != (entry.mtime_ns, entry.size)
    ]
    deleted = tuple(sorted(name for name in names if name in known and name not in entries))
    return DirtyState(tuple(changed), deleted)


__all__ = ["file_entry", "scan_paths"]
