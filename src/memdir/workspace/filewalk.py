"""Listing the Markdown files of a folder the way the path policy wants it
(docs/design.md#path-safety): no symlink followed, FIFOs, sockets and devices and names that are
not UTF-8 skipped with a reason, iterative and depth-bounded.
:meth:`memdir.workspace.layout.Workspace.iter_files` uses it for MEMORY.md, ``memory/``,
``skills/`` and the extra paths.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator

from memdir.workspace.fileio import describe_mode

#: ``(path as shown, why it was skipped)`` of an entry the walk could not index.
Skipped = tuple[str, str]

#: Folders below ``memory/``, ``skills/`` or an extra path deeper than this are not entered
#: (a tree of ~950 nested folders used to exhaust Python's recursion).
MAX_FOLDER_DEPTH = 64


def ignore_skipped(_: Skipped) -> None:
    """A ``skip`` callback that drops what it is told."""
    return None


def _shown_name(name: str) -> str | None:
    """``name`` when it is valid UTF-8 (it came from ``os.scandir``), else None."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return name


def _printable(path: str) -> str:
    """A path with undecodable bytes shown as ``\\xNN`` (for a warning)."""
    return os.fsencode(path).decode("utf-8", errors="backslashreplace")


def regular_md_stat(
    path: str, shown: str, skip: Callable[[Skipped], None]
) -> os.stat_result | None:
    """The ``lstat`` of ``path`` when it is a regular ``.md`` file (not a symlink), else None
    (reporting a symlink or a special file to ``skip``)."""
    if not path.lower().endswith(".md"):
        return None
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISREG(st.st_mode):
        return st
    if not stat.S_ISDIR(st.st_mode):
        skip((shown, f"{describe_mode(st.st_mode)}: not indexed"))
    return None


def note_folder(path: str, folders: dict[str, int]) -> None:
    """Record the modification time (ns) of the folder ``path`` in ``folders`` (-1: none)."""
    try:
        folders[path] = os.stat(path).st_mtime_ns
    except OSError:
        folders[path] = -1


def folders_changed(folders: dict[str, int]) -> bool:
    """Whether any folder of ``folders`` (from :func:`note_folder`) changed since: a file
    added, removed or renamed in it changes its modification time."""
    for path, mtime_ns in folders.items():
        try:
            if os.stat(path).st_mtime_ns != mtime_ns:
                return True
        except OSError:
            if mtime_ns != -1:
                return True
    return False


def walk_file_or_folder(
    location: str,
    shown: str,
    skip: Callable[[Skipped], None],
    folders: dict[str, int] | None = None,
) -> Iterable[tuple[str, str, os.stat_result]]:
    """One Markdown file (an ``extra_paths`` entry may name one), or those under a folder (see
    :func:`walk_markdown`); ``folders`` also gets the folder of a single file."""
    st = regular_md_stat(location, shown, ignore_skipped)
    if st is None:
        return walk_markdown(location, shown, skip, folders)
    if folders is not None:
        note_folder(os.path.dirname(location), folders)
    return [(location, "", st)]


def walk_markdown(
    folder: str,
    rel: str,
    skip: Callable[[Skipped], None],
    folders: dict[str, int] | None = None,
) -> Iterator[tuple[str, str, os.stat_result]]:
    """``(absolute path, posix path relative to the workspace, lstat)`` of the Markdown files
    under ``folder``, sorted, depth first, skipping symlinks and hidden folders; with
    ``folders``, the modification time of every folder listed (taken before listing it).

    Iterative, so no nesting exhausts the stack; :data:`MAX_FOLDER_DEPTH` bounds it anyway.
    """
    if os.path.islink(folder):
        return
    stack: list[tuple[str, str, int]] = [(folder, rel, 0)]
    while stack:
        path, prefix, depth = stack.pop()
        if folders is not None:
            note_folder(path, folders)
        try:
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            skip((prefix or path, f"folder cannot be read ({exc.strerror}): not indexed"))
            continue
        subfolders: list[tuple[str, str, int]] = []
        for entry in entries:
            name = _shown_name(entry.name)
            shown = f"{prefix}/{name}" if prefix else (name or "")
            try:
                is_link = entry.is_symlink()
                is_dir = not is_link and entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir and entry.name.startswith("."):
                continue
            if not is_dir and not entry.name.lower().endswith(".md"):
                continue
            if name is None:
                bad = _printable(entry.path)
                skip((bad, "name is not valid UTF-8: not indexed (rename it)"))
                continue
            if is_link:
                skip((shown, "a symlink: not followed, not indexed"))
            elif is_dir:
                if depth + 1 > MAX_FOLDER_DEPTH:
                    skip((shown, f"nested deeper than {MAX_FOLDER_DEPTH} folders: not indexed"))
                else:
                    subfolders.append((entry.path, shown, depth + 1))
            else:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    yield entry.path, shown, st
                else:
                    skip((shown, f"{describe_mode(st.st_mode)}: not indexed"))
        stack.extend(reversed(subfolders))
