"""The workspace on disk: its layout and the one path policy for what memdir reads and writes.

:class:`Workspace` decides which paths may be touched: :meth:`Workspace.resolve_memory_path` for
every path that comes from outside (a tool call, the CLI), :meth:`Workspace.iter_files` for what
is indexed, :meth:`Workspace.write_path` for every writer. The bytes then move through
:mod:`memdir.workspace.fileio` (no symlink followed, no FIFO or device opened, atomic replace or
locked append). Limits, written down in docs/reliability.md: a hard link inside the workspace to a
file elsewhere is indistinguishable from a regular file and is read and written like one.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path, PurePosixPath

from memdir.config.settings import memdir_home
from memdir.errors import PathNotAllowed, WorkspaceError
from memdir.safety.privacy import DEFAULT_GUARD, SecretGuard
from memdir.workspace.fileio import (
    atomic_write,
    check_replaceable,
    clean_stale_temp_files,
    describe_mode,
    locked_append,
    read_regular_file,
)
from memdir.workspace.fileswap import Swap, replace_unless_changed
from memdir.workspace.filewalk import (
    Skipped,
    ignore_skipped,
    note_folder,
    regular_md_stat,
    walk_file_or_folder,
    walk_markdown,
)

STATE_DIR = ".memdir"
MEMORY_FILE = "MEMORY.md"
#: Who the user is (read by the agent, private like MEMORY.md: docs/design.md#scopes).
USER_FILE = "USER.md"
#: The agent's persona and standing rules (instructions, not data).
AGENTS_FILE = "AGENTS.md"
#: Dreaming's diary of applied runs (``memdir dream --apply --diary``).
DREAMS_FILE = "DREAMS.md"
MEMORY_DIR = "memory"
SKILLS_DIR = "skills"
#: Files a person keeps at the workspace root beside MEMORY.md: shown to the owner
#: (``Memory.read``, ``memdir ui``), never returned by ``memory_get``.
OWNER_FILES = (USER_FILE, AGENTS_FILE, DREAMS_FILE)

_DAILY_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})\.md$")
_ARCHIVE_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})-.+\.md$")

#: MEMORY.md section keys and their headings per language (docs/design.md#workspace).
SECTION_HEADINGS: dict[str, dict[str, str]] = {
    "en": {
        "preferences": "Preferences",
        "decisions": "Decisions",
        "lessons": "Lessons",
        "facts": "Project facts",
        "todos": "Todos",
    },
    "zh": {
        "preferences": "用户偏好",
        "decisions": "核心决策",
        "lessons": "经验教训",
        "facts": "项目事实",
        "todos": "待办事项",
    },
}


def is_workspace(folder: Path) -> bool:
    """Whether ``folder`` is a workspace: ``memdir init`` made it (``.memdir/``), or it already
    holds memory files (``MEMORY.md`` or ``memory/``). Nothing is created in any other folder."""
    return (
        (folder / STATE_DIR).is_dir()
        or (folder / MEMORY_FILE).is_file()
        or (folder / MEMORY_DIR).is_dir()
    )


def home_folder(folder: Path) -> str:
    """Why ``folder`` is a home folder that is never a workspace ("" when it is not):
    ``MEMDIR_HOME`` itself, the folder whose ``.memdir`` is ``MEMDIR_HOME``, or a user's home
    (this user's, or the home of the user who owns it). A home's ``.memdir/`` is memdir's own
    state by default: taken for a workspace's, it would get index files and locks mixed into
    memdir's home (issue 35; docs/design.md#workspace)."""
    try:
        resolved = folder.expanduser().resolve()
        home = memdir_home().resolve()
    except (OSError, RuntimeError):
        return ""
    homes = {os.environ.get("HOME", ""), str(Path.home())}
    with contextlib.suppress(ImportError, KeyError, OSError):  # Windows; a user not listed
        import pwd

        homes.add(pwd.getpwuid(os.getuid()).pw_dir)
        homes.add(pwd.getpwuid(resolved.stat().st_uid).pw_dir)  # gone: not a home
    for name in homes - {"", "/"}:
        try:
            if Path(name).resolve() == resolved:
                return "a user's home folder"
        except (OSError, RuntimeError):
            continue
    if resolved == home:
        return "memdir's own home (MEMDIR_HOME), which holds its state, not notes"
    if (resolved / STATE_DIR).resolve() == home:
        return f"the folder that holds memdir's own home ({home})"
    return ""


def refuse_home_folder(folder: Path) -> None:
    """Raise when ``folder`` is a home folder (:func:`home_folder`), before anything is read
    or made there.

    Raises:
        WorkspaceError: saying what it is and where to keep a workspace instead.
    """
    what = home_folder(folder)
    if what:
        raise WorkspaceError(
            f"{folder} is {what}: memdir does not use it as a workspace and made nothing there; "
            f"use a folder inside it (`memdir init {folder / 'notes'}`), or the default "
            f"workspace {memdir_home() / 'workspace'}"
        )


@dataclass(frozen=True)
class FileEntry:
    """One indexable Markdown file: its workspace-relative path, where it came from, and the
    (mtime, size) seen when the folder was listed (so a freshness check needs no second stat)."""

    path: str  # posix path relative to the workspace, or the absolute path of an extra file
    location: str  # absolute path
    source: str  # "memory" for workspace files, "extra" for configured extra paths
    mtime_ns: int = -1
    size: int = -1

    @property
    def abspath(self) -> Path:
        return Path(self.location)


class Workspace:
    """A memdir workspace folder, and the one path policy for everything memdir reads or writes.

    - Reads of a caller's path (a tool call, the CLI): :meth:`resolve_memory_path`.
    - The files to index: :meth:`iter_files` (no symlink followed, special files and names that
      are not UTF-8 skipped with a reason, folders nested deeper than
      :data:`~memdir.workspace.filewalk.MAX_FOLDER_DEPTH` not entered).
    - Writes: :meth:`write_path` for the target, then :meth:`replace_file` or
      :meth:`append_file` (never through a symlink, never into a special file).
    - Configured extra paths are resolved once here; one that a symlink leads out of the
      workspace is refused (:attr:`warnings`). Their files are read only below the resolved
      folder, never through a link inside it.

    Args:
        root: the workspace folder. It must exist (use :func:`init_workspace` to create one).
        extra_paths: more Markdown files or folders to index and allow in ``memory_get``.
            One inside the workspace must stay there once its links are resolved.
        audit_git: ``auto`` records automatic writes as git commits when the workspace is in a
            git repository; ``off`` always uses ``.memdir/audit.jsonl`` (see memdir.audit).
        secrets: the secrets check for automatic writes; default: redact.

    Raises:
        WorkspaceError: the folder is missing, or its state folder is (or holds) a symlink.
    """

    def __init__(
        self,
        root: Path | str,
        extra_paths: tuple[str, ...] = (),
        *,
        audit_git: str = "auto",
        secrets: SecretGuard | None = None,
    ) -> None:
        path = Path(root).expanduser()
        if not path.exists():
            raise WorkspaceError(
                f"workspace {path} does not exist: run `memdir init {path}` to create it"
            )
        if not path.is_dir():
            raise WorkspaceError(f"workspace {path} is not a folder")
        refuse_home_folder(path)
        if not is_workspace(path):
            raise WorkspaceError(
                f"{path} is not a memdir workspace (it has no {MEMORY_FILE}, {MEMORY_DIR}/ or "
                f"{STATE_DIR}/): run `memdir init {path}` to make it one"
            )
        self.root = path.resolve()
        self.audit_git = audit_git
        #: Configured paths that were refused, and why (``memdir status`` lists them).
        self.warnings: list[str] = []
        self.extra_paths = self._checked_extra_paths(extra_paths)
        #: The secrets check every automatic write applies (:mod:`memdir.safety.privacy`).
        self.secrets = secrets if secrets is not None else DEFAULT_GUARD
        #: Writes prepared by :meth:`write_path` (the index's freshness check: design.md#index).
        self.writes = 0
        self._check_state_dir()

    def _checked_extra_paths(self, entries: tuple[str, ...]) -> tuple[Path, ...]:
        kept: list[Path] = []
        for entry in entries:
            given = Path(entry).expanduser()
            lexical = Path(os.path.normpath(self.root / given))
            resolved = lexical.resolve()
            # A relative path names a place in the workspace: a symlink there must not lead out
            # (a cloned repository carries links). `..` in the user's own config is explicit.
            if is_within(lexical, self.root) and not is_within(resolved, self.root):
                self.warnings.append(
                    f"index.extra_paths: {entry!r} leads out of the workspace (to {resolved}) "
                    "through a symlink: not indexed and not readable"
                )
            elif is_within(resolved, self.state_dir):
                self.warnings.append(f"index.extra_paths: {entry!r} is memdir's state folder")
            else:
                kept.append(resolved)
        return tuple(kept)

    def _check_state_dir(self) -> None:
        """Refuse a ``.memdir`` that is not a folder, or that holds (in it or its sub-folders,
        :data:`_STATE_DEPTH` deep) a symlink, a FIFO, a socket or a device: memdir writes its
        index, locks, sessions, audit records and hook state there, and a cloned repository
        could aim those writes at any file, or make a read of them block forever."""
        state = self.state_dir
        try:
            st = os.lstat(state)
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(st.st_mode):
            raise WorkspaceError(
                f"{state} is {describe_mode(st.st_mode)}, not a folder: memdir keeps its state "
                "there; move it away"
            )
        folders = [(state, 0)]
        while folders:
            folder, depth = folders.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries[:_STATE_SCAN_LIMIT]:
                try:
                    if entry.is_symlink():
                        if folder == state and entry.name in _STATE_LINKS_ALLOWED:
                            continue
                        raise WorkspaceError(
                            f"{entry.path} is a symlink: memdir's state folder must hold none "
                            "(a cloned repository could aim memdir's writes at any file); "
                            "remove it"
                        )
                    if entry.is_dir(follow_symlinks=False):
                        if depth < _STATE_DEPTH:
                            folders.append((Path(entry.path), depth + 1))
                    elif not entry.is_file(follow_symlinks=False):
                        mode = entry.stat(follow_symlinks=False).st_mode
                        raise WorkspaceError(
                            f"{entry.path} is {describe_mode(mode)}: memdir's state folder holds "
                            "only files and folders (reading this one would block); remove it"
                        )
                except OSError:  # gone meanwhile
                    continue

    @property
    def state_dir(self) -> Path:
        """``<workspace>/.memdir``: machine state, never the truth."""
        return self.root / STATE_DIR

    @property
    def tmp_dir(self) -> Path:
        """Where :meth:`replace_file` puts its temp files (git-ignored, cleaned at start-up)."""
        return self.state_dir / "tmp"

    @property
    def lock_dir(self) -> Path:
        return self.state_dir / "locks"

    @property
    def memory_file(self) -> Path:
        return self.root / MEMORY_FILE

    def daily_log(self, day: str) -> Path:
        """The path of the daily log for ``day`` (``YYYY-MM-DD``)."""
        return self.root / MEMORY_DIR / f"{day}.md"

    # -- the files to index ---------------------------------------------------------------

    def iter_files(
        self, skipped: list[Skipped] | None = None, folders: dict[str, int] | None = None
    ) -> Iterator[FileEntry]:
        """Yield every indexable Markdown file, sorted, without following symlinks
        (docs/design.md#path-safety).

        Uses ``os.scandir`` so that each file costs one ``lstat`` (a search runs this first).

        Args:
            skipped: when given, receives ``(path, reason)`` for each ``.md`` file or folder
                that was left out: a symlink, a FIFO/socket/device, a name that is not UTF-8,
                a folder that cannot be read or is nested too deep.
            folders: when given, receives the modification time (ns) of every folder listed,
                taken before it is listed (a file added, removed or renamed there changes it).
        """
        skip = skipped.append if skipped is not None else ignore_skipped
        seen: set[str] = set()
        root = str(self.root)
        if folders is not None:
            note_folder(root, folders)
        memory = os.path.join(root, MEMORY_FILE)
        st = regular_md_stat(memory, MEMORY_FILE, skip)
        if st is not None:
            seen.add(memory)
            yield FileEntry(MEMORY_FILE, memory, "memory", st.st_mtime_ns, st.st_size)
        for folder in (MEMORY_DIR, SKILLS_DIR):
            location = os.path.join(root, folder)
            if os.path.islink(location):
                skip((folder, "a symlink: not followed, not indexed"))
                continue
            for abspath, rel, st in walk_markdown(location, folder, skip, folders):
                seen.add(abspath)
                yield FileEntry(rel, abspath, "memory", st.st_mtime_ns, st.st_size)
        for extra in self.extra_paths:
            found = walk_file_or_folder(str(extra), self.display_path(extra), skip, folders)
            for abspath, _, entry_stat in found:
                if abspath in seen:
                    continue
                seen.add(abspath)
                rel, size = self.display_path(Path(abspath)), entry_stat.st_size
                yield FileEntry(rel, abspath, "extra", entry_stat.st_mtime_ns, size)

    def display_path(self, abspath: Path) -> str:
        """Workspace-relative posix path when inside the workspace, else the absolute path."""
        try:
            return abspath.relative_to(self.root).as_posix()
        except ValueError:
            return abspath.as_posix()

    # -- reading ----------------------------------------------------------------------------

    def resolve_memory_path(self, path: str) -> Path:
        """Check a path given by a caller and return where it points (docs/design.md#path-safety).

        Allowed: MEMORY.md, ``memory/**``, ``skills/**`` and configured extra paths; ``.md``
        only; no ``..``, no absolute path outside the extra paths, no symlink anywhere on the
        way, no FIFO, socket or device; and once every link is resolved, still inside.

        Raises:
            PathNotAllowed: with the reason, for any other path.
        """
        if not path or "\x00" in path:
            raise PathNotAllowed("empty or invalid path")
        raw = Path(path)
        if not raw.name.lower().endswith(".md"):
            raise PathNotAllowed(f"{path}: only .md memory files can be read")
        if ".." in raw.parts:
            raise PathNotAllowed(f"{path}: '..' is not allowed in memory paths")
        if raw.is_absolute():
            for extra in self.extra_paths:
                if is_within(raw, extra):
                    _refuse_symlinks(raw, stop_at=extra)
                    return _checked_target(raw, extra, path)
            try:
                rel = raw.relative_to(self.root)
            except ValueError:
                raise PathNotAllowed(f"{path}: outside the workspace") from None
            return self.resolve_memory_path(rel.as_posix())
        parts = raw.parts
        allowed = (len(parts) == 1 and parts[0] == MEMORY_FILE) or (
            len(parts) > 1 and parts[0] in (MEMORY_DIR, SKILLS_DIR)
        )
        candidate = self.root / raw
        base = self.root
        if not allowed:
            base = next((e for e in self.extra_paths if is_within(candidate, e)), Path())
            if base == Path():
                raise PathNotAllowed(
                    f"{path}: only MEMORY.md, memory/**, skills/** and configured extra paths "
                    "can be read"
                )
        _refuse_symlinks(candidate, stop_at=self.root)
        return _checked_target(candidate, base, path)

    def read_file(self, rel: str) -> bytes:
        """The bytes of a workspace file memdir itself reads (``AGENTS.md``, a daily log…):
        the same rules as a write target, so no symlink and no special file.

        Raises:
            FileNotFoundError: the file does not exist.
            PathNotAllowed: a symlink on the way, or not a regular file.
        """
        return read_regular_file(self.write_path(rel))

    # -- writing ----------------------------------------------------------------------------

    def write_path(self, rel: str) -> Path:
        """Where memdir may write ``rel`` (workspace-relative): every folder on the way a real
        folder, not a symlink; the file itself absent or a regular file.

        Raises:
            PathNotAllowed: with the reason and what to do.
        """
        raw = PurePosixPath(rel)
        if not rel or raw.is_absolute() or ".." in raw.parts or "\x00" in rel:
            raise PathNotAllowed(f"{rel!r}: not a path inside the workspace")
        self.writes += 1
        current = self.root
        for part in raw.parts[:-1]:
            current = current / part
            try:
                st = os.lstat(current)
            except FileNotFoundError:
                break  # the writer creates the rest
            if stat.S_ISLNK(st.st_mode):
                raise PathNotAllowed(
                    f"{rel}: {self.display_path(current)} is a symlink; memdir never writes "
                    "through a symlink (it would change files elsewhere)"
                )
            if not stat.S_ISDIR(st.st_mode):
                raise PathNotAllowed(f"{rel}: {self.display_path(current)} is not a folder")
        target = self.root / raw
        check_replaceable(target)
        return target

    def replace_file(self, rel: str, text: str) -> Path:
        """Replace ``rel`` atomically (:func:`~memdir.workspace.fileio.atomic_write`); returns its
        path."""
        path = self.write_path(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text, tmp_dir=self.tmp_dir)
        return path

    def update_file(self, rel: str, expected: str | None, text: str) -> Swap:
        """Replace ``rel`` with ``text`` if it still holds ``expected`` (None: if it does not
        exist), keeping what others append to it meanwhile
        (:func:`~memdir.workspace.fileswap.replace_unless_changed`; texts as UTF-8, a byte that is
        not kept as a surrogate)."""
        path = self.write_path(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        old = None if expected is None else expected.encode("utf-8", "surrogateescape")
        new = text.encode("utf-8", "surrogateescape")
        return replace_unless_changed(path, old, new, tmp_dir=self.tmp_dir)

    def append_file(self, rel: str, text: str) -> int:
        """Append to ``rel`` under its lock (:func:`~memdir.workspace.fileio.locked_append`);
        returns the 1-based line where ``text`` starts."""
        return locked_append(self.write_path(rel), text, lock_dir=self.lock_dir)

    def clean_stale_files(self) -> list[str]:
        """Remove temp files that killed writes left (older than an hour); returns them."""
        folders = [self.tmp_dir, self.root, self.root / MEMORY_DIR]
        return [self.display_path(Path(p)) for p in clean_stale_temp_files(folders)]

    def resolve_owner_file(self, name: str) -> Path:
        """Where one of :data:`OWNER_FILES` is (USER.md, AGENTS.md, DREAMS.md).

        Raises:
            PathNotAllowed: ``name`` is not one of them, or it is a symlink.
        """
        if name not in OWNER_FILES:
            raise PathNotAllowed(f"{name}: not one of {', '.join(OWNER_FILES)}")
        candidate = self.root / name
        _refuse_symlinks(candidate, stop_at=self.root)
        return _checked_target(candidate, self.root, name)


def file_kind(path: str) -> str:
    """What a workspace file is, from its workspace-relative path: ``memory`` (MEMORY.md),
    ``user``, ``agents``, ``dreams``, ``daily`` (memory/YYYY-MM-DD.md), ``archive`` (a session
    archive memory/YYYY-MM-DD-slug.md), ``skill`` (skills/**), ``topic`` (any other note under
    memory/) or ``other``."""
    if path == MEMORY_FILE:
        return "memory"
    if path in OWNER_FILES:
        return path.removesuffix(".md").lower()
    if is_daily_log(path):
        return "daily"
    parts = path.split("/")
    if parts[0] == SKILLS_DIR and len(parts) > 1:
        return "skill"
    if parts[0] == MEMORY_DIR and len(parts) > 1:
        return "archive" if archive_date(path) else "topic"
    return "other"


def archive_date(path: str) -> str | None:
    """``YYYY-MM-DD`` when ``path`` is named like a session archive (``memory/<date>-<slug>.md``,
    docs/design.md#lifecycle), else None."""
    parts = path.split("/")
    if len(parts) == 2 and parts[0] == MEMORY_DIR:
        match = _ARCHIVE_RE.match(parts[1])
        if match:
            try:
                date.fromisoformat(match.group(1))
            except ValueError:
                return None
            return match.group(1)
    return None


def is_daily_log(path: str) -> str | None:
    """Return ``YYYY-MM-DD`` when ``path`` is a daily log ``memory/YYYY-MM-DD.md``, else None."""
    parts = path.split("/")
    if len(parts) == 2 and parts[0] == MEMORY_DIR:
        match = _DAILY_RE.match(parts[1])
        if match:
            day = "-".join(match.groups())
            try:
                date.fromisoformat(day)
            except ValueError:  # memory/2026-13-45.md is a topic note, not a daily log
                return None
            return day
    return None


#: How deep below ``.memdir`` its entries are checked (``audit/pending/`` is two folders down),
#: and how many entries of each folder.
_STATE_DEPTH = 2
_STATE_SCAN_LIMIT = 10_000
#: The one file in ``.memdir`` that may be a link: it is only read, and dotfile managers link it.
_STATE_LINKS_ALLOWED = frozenset({"config.toml"})


def is_within(path: Path, folder: Path) -> bool:
    """True when ``path`` is ``folder`` or inside it (by their names; nothing is resolved)."""
    try:
        path.relative_to(folder)
    except ValueError:
        return False
    return True


def _refuse_symlinks(path: Path, *, stop_at: Path) -> None:
    """Refuse ``path`` if it or any parent below ``stop_at`` is a symlink."""
    current = path
    while current != stop_at:
        if current.is_symlink():
            raise PathNotAllowed(f"{path}: symlinks are not followed")
        if current.parent == current:
            break
        current = current.parent


def _checked_target(candidate: Path, base: Path, shown: str) -> Path:
    """The last line of the read policy: not a special file, and inside ``base`` once every
    link is resolved (whatever the lexical checks missed)."""
    try:
        st = os.lstat(candidate)
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise PathNotAllowed(f"{shown}: {describe_mode(st.st_mode)}, not a regular file")
    if not is_within(Path(os.path.realpath(candidate)), base):
        raise PathNotAllowed(f"{shown}: leads outside {base} once symlinks are resolved")
    return candidate


#: ``Skipped`` is the walk's (:mod:`memdir.workspace.filewalk`); the index imports it from here.
__all__ = ["FileEntry", "Skipped", "Workspace", "is_daily_log"]
