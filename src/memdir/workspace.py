"""The workspace on disk: its layout, path safety, and the only two ways memdir writes Markdown.

Every writer in memdir goes through :func:`atomic_write` (temp file + fsync + rename, so a crash
leaves the old or the new file, never a torn one) or :func:`locked_append` (an exclusive
cross-process lock around an append). Every path that comes from outside (a tool call, the CLI)
goes through :meth:`Workspace.resolve_memory_path`, the one place that decides what may be read.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from filelock import FileLock, Timeout

from memdir.errors import PathNotAllowed, WorkspaceError

STATE_DIR = ".memdir"
MEMORY_FILE = "MEMORY.md"
MEMORY_DIR = "memory"
SKILLS_DIR = "skills"
#: Files a person keeps at the workspace root beside MEMORY.md: shown to the owner
#: (``Memory.read``, ``memdir ui``), never returned by ``memory_get``.
OWNER_FILES = ("USER.md", "AGENTS.md", "DREAMS.md")

_DAILY_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})\.md$")
_ARCHIVE_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})-.+\.md$")

#: MEMORY.md section keys and their headings per language (SPEC §1).
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

_TEMPLATES: dict[str, dict[str, str]] = {
    "en": {
        "MEMORY.md": (
            "# Long-term memory\n\n"
            "Curated facts worth keeping across sessions. Edit freely: memdir only appends to the\n"
            "section it is told to and never removes what you wrote.\n\n"
            "## Preferences\n\n## Decisions\n\n## Lessons\n\n## Project facts\n\n## Todos\n"
        ),
        "USER.md": "# User\n\nWho the user is: name, role, time zone, stable preferences.\n",
        "AGENTS.md": (
            "# Agent\n\nPersona and standing rules for the agent.\n\n"
            "- Search memory before answering questions about prior work, decisions, dates,\n"
            "  people, preferences or todos.\n"
            "- Write durable facts to MEMORY.md and day-to-day notes to memory/YYYY-MM-DD.md.\n"
        ),
    },
    "zh": {
        "MEMORY.md": (
            "# 长期记忆\n\n"
            "跨会话值得保留的事实。可以随意编辑：memdir 只会在指定的小节追加内容，\n"
            "不会删除你写下的任何文字。\n\n"
            "## 用户偏好\n\n## 核心决策\n\n## 经验教训\n\n## 项目事实\n\n## 待办事项\n"
        ),
        "USER.md": "# 用户\n\n用户是谁：姓名、角色、时区、稳定的偏好。\n",
        "AGENTS.md": (
            "# 智能体\n\n智能体的角色与长期规则。\n\n"
            "- 回答有关以往工作、决策、日期、人物、偏好或待办的问题之前，先搜索记忆。\n"
            "- 长期事实写入 MEMORY.md，日常记录写入 memory/YYYY-MM-DD.md。\n"
        ),
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
    """A memdir workspace folder.

    Args:
        root: the workspace folder. It must exist (use :func:`init_workspace` to create one).
        extra_paths: more Markdown files or folders to index and allow in ``memory_get``.
    """

    def __init__(self, root: Path | str, extra_paths: tuple[str, ...] = ()) -> None:
        path = Path(root).expanduser()
        if not path.exists():
            raise WorkspaceError(
                f"workspace {path} does not exist: run `memdir init {path}` to create it"
            )
        if not path.is_dir():
            raise WorkspaceError(f"workspace {path} is not a folder")
        if not is_workspace(path):
            raise WorkspaceError(
                f"{path} is not a memdir workspace (it has no {MEMORY_FILE}, {MEMORY_DIR}/ or "
                f"{STATE_DIR}/): run `memdir init {path}` to make it one"
            )
        self.root = path.resolve()
        self.extra_paths = tuple(
            (p if p.is_absolute() else self.root / p).resolve()
            for p in (Path(e).expanduser() for e in extra_paths)
        )

    @property
    def state_dir(self) -> Path:
        """``<workspace>/.memdir``: machine state, never the truth."""
        return self.root / STATE_DIR

    @property
    def memory_file(self) -> Path:
        return self.root / MEMORY_FILE

    def daily_log(self, day: str) -> Path:
        """The path of the daily log for ``day`` (``YYYY-MM-DD``)."""
        return self.root / MEMORY_DIR / f"{day}.md"

    def iter_files(self) -> Iterator[FileEntry]:
        """Yield every indexable Markdown file, sorted, without following symlinks (SPEC §3).

        Uses ``os.scandir`` so that each file costs one ``lstat`` (a search runs this first).
        """
        seen: set[str] = set()
        root = str(self.root)
        memory = os.path.join(root, MEMORY_FILE)
        st = _regular_md_stat(memory)
        if st is not None:
            seen.add(memory)
            yield FileEntry(MEMORY_FILE, memory, "memory", st.st_mtime_ns, st.st_size)
        for folder in (MEMORY_DIR, SKILLS_DIR):
            for location, rel, st in _walk_md(os.path.join(root, folder), folder):
                seen.add(location)
                yield FileEntry(rel, location, "memory", st.st_mtime_ns, st.st_size)
        for extra in self.extra_paths:
            location = str(extra)
            st = _regular_md_stat(location)
            found = [(location, "", st)] if st is not None else list(_walk_md(location, ""))
            for abspath, _, entry_stat in found:
                if abspath in seen:
                    continue
                seen.add(abspath)
                yield FileEntry(
                    self.display_path(Path(abspath)),
                    abspath,
                    "extra",
                    entry_stat.st_mtime_ns,
                    entry_stat.st_size,
                )

    def display_path(self, abspath: Path) -> str:
        """Workspace-relative posix path when inside the workspace, else the absolute path."""
        try:
            return abspath.relative_to(self.root).as_posix()
        except ValueError:
            return abspath.as_posix()

    def resolve_memory_path(self, path: str) -> Path:
        """Check a path given by a caller and return where it points (SPEC §6).

        Allowed: MEMORY.md, ``memory/**``, ``skills/**`` and configured extra paths; ``.md``
        only; no ``..``, no absolute path outside the extra paths, no symlink anywhere on the way.

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
                if _within(raw, extra):
                    _refuse_symlinks(raw, stop_at=extra)
                    return raw
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
        if not allowed and not any(_within(candidate, extra) for extra in self.extra_paths):
            raise PathNotAllowed(
                f"{path}: only MEMORY.md, memory/**, skills/** and configured extra paths "
                "can be read"
            )
        _refuse_symlinks(candidate, stop_at=self.root)
        return candidate

    def resolve_owner_file(self, name: str) -> Path:
        """Where one of :data:`OWNER_FILES` is (USER.md, AGENTS.md, DREAMS.md).

        Raises:
            PathNotAllowed: ``name`` is not one of them, or it is a symlink.
        """
        if name not in OWNER_FILES:
            raise PathNotAllowed(f"{name}: not one of {', '.join(OWNER_FILES)}")
        candidate = self.root / name
        _refuse_symlinks(candidate, stop_at=self.root)
        return candidate


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
    SPEC §7), else None."""
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


def init_workspace(
    root: Path | str, lang: str = "en", *, sample: bool = False
) -> tuple[Path, list[str]]:
    """Create the workspace tree of SPEC §1 with templates; never overwrite an existing file.

    Args:
        root: the folder to create or complete.
        lang: ``en`` or ``zh`` templates and MEMORY.md headings.
        sample: also add a few example notes (English and Chinese) to try search on.

    Returns:
        The resolved workspace path and the list of files created (relative paths).

    Raises:
        WorkspaceError: the language is unknown or the folder cannot be written.
    """
    if lang not in _TEMPLATES:
        raise WorkspaceError(f"unknown language {lang!r}: choose one of {', '.join(_TEMPLATES)}")
    path = Path(root).expanduser()
    created: list[str] = []
    try:
        path.mkdir(parents=True, exist_ok=True)
        path = path.resolve()
        for folder in (MEMORY_DIR, SKILLS_DIR, STATE_DIR):
            (path / folder).mkdir(exist_ok=True)
        files = dict(_TEMPLATES[lang])
        if sample:
            files.update(_sample_files())
        for name, text in files.items():
            target = path / name
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(target, text)
                created.append(name)
        ignore = path / ".gitignore"
        lines = ignore.read_text(encoding="utf-8").splitlines() if ignore.exists() else []
        if f"{STATE_DIR}/" not in lines and STATE_DIR not in lines:
            atomic_write(ignore, "\n".join([*lines, f"{STATE_DIR}/"]) + "\n")
            created.append(".gitignore")
    except OSError as exc:
        raise WorkspaceError(f"cannot create workspace at {path}: {exc.strerror}") from exc
    return path, created


def _sample_files() -> dict[str, str]:
    """The example notes shipped in ``memdir/samples`` (relative path → text)."""
    base = resources.files("memdir") / "samples"
    out: dict[str, str] = {}

    def walk(node: Traversable, prefix: str) -> None:
        for child in node.iterdir():
            rel = f"{prefix}{child.name}"
            if child.is_dir():
                walk(child, rel + "/")
            elif child.name.endswith(".md"):
                out[rel] = child.read_text(encoding="utf-8")

    walk(base, "")
    return out


def atomic_write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically: temp file in the same folder, fsync, rename.

    A crash at any point leaves either the old file or the new one. The file mode of an existing
    file is kept.
    """
    data = text.encode("utf-8")
    folder = path.parent
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~_UMASK  # a new file gets the usual mode, not mkstemp's 0600
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(folder)


def locked_append(path: Path, text: str, *, lock_dir: Path, timeout: float = 10.0) -> int:
    """Append ``text`` to ``path`` under an exclusive cross-process lock; return its first line.

    The text is written with one ``write`` call on an ``O_APPEND`` descriptor and fsynced, so a
    concurrent appender never interleaves inside it. A file not ending in a newline gets one first.

    Returns:
        The 1-based line number where ``text`` starts.

    Raises:
        WorkspaceError: the lock could not be taken within ``timeout`` seconds.
    """
    lock_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(lock_dir / f"{_lock_name(path)}.lock"))
    try:
        with lock.acquire(timeout=timeout):
            path.parent.mkdir(parents=True, exist_ok=True)
            existing = path.read_bytes() if path.exists() else b""
            prefix = b"\n" if existing and not existing.endswith(b"\n") else b""
            start_line = existing.count(b"\n") + 1 + (1 if prefix else 0)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, prefix + text.encode("utf-8"))
                os.fsync(fd)
            finally:
                os.close(fd)
            return start_line
    except Timeout as exc:
        raise WorkspaceError(f"{path}: another process holds the write lock; try again") from exc


def _read_umask() -> int:
    # os.umask can only be read by setting it; do it once, at import, before any threads.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def _lock_name(path: Path) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", str(path.resolve()))[-150:]


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _regular_md_stat(path: str) -> os.stat_result | None:
    """The ``lstat`` of ``path`` when it is a regular ``.md`` file (not a symlink), else None."""
    if not path.lower().endswith(".md"):
        return None
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def _walk_md(folder: str, rel: str) -> Iterator[tuple[str, str, os.stat_result]]:
    """``(absolute path, posix path relative to the workspace, lstat)`` of the Markdown files
    under ``folder``, sorted, skipping symlinks and hidden folders."""
    if os.path.islink(folder):
        return
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:  # missing, not a folder, unreadable
        return
    subfolders = []
    for entry in entries:
        if entry.is_symlink():
            continue
        prefix = f"{rel}/{entry.name}" if rel else entry.name
        if entry.is_dir(follow_symlinks=False):
            if not entry.name.startswith("."):
                subfolders.append((entry.path, prefix))
        elif entry.name.lower().endswith(".md"):
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                yield entry.path, prefix, st
    for path, prefix in subfolders:
        yield from _walk_md(path, prefix)


def _within(path: Path, folder: Path) -> bool:
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
