"""Whether memdir may commit to the repository that holds the workspace now (issue 27).

A commit made on a detached HEAD, or in the middle of a merge, rebase, cherry-pick, revert or
bisect, is thrown away by the person's next ordinary command (``git checkout main``, ``git
rebase --abort``), and with it the files' new lines: facts memdir had acknowledged vanished.
A repository owned by another user is one git itself refuses to work in ("dubious ownership",
the ``safe.directory`` rule). And git's ignore rules are read from files a person controls
(``.gitignore`` in every folder, ``info/exclude``, ``core.excludesFile``): one that is a FIFO
or ``/dev/zero`` blocked every automatic write for ever, or filled the memory.

:func:`unsafe_reason` says, from the files of the git folder alone (no git binary, no dulwich:
nothing is read that could block — every file is checked to be a regular file of bounded size
before it is opened), why memdir must not commit now. The audit seam then records the write in
``.memdir/audit.jsonl`` instead and keeps what it wrote, to put it back should git remove it
(:mod:`memdir.audit.deferred`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from memdir.workspace.fileio import describe_mode

#: A git file larger than this is not read (a config or an ignore file is a few KiB).
MAX_GIT_FILE = 1 << 20
#: Files in the git folder that mean an operation is in progress, and its name.
IN_PROGRESS = (
    ("MERGE_HEAD", "a merge"),
    ("rebase-merge", "a rebase"),
    ("rebase-apply", "a rebase"),
    ("CHERRY_PICK_HEAD", "a cherry-pick"),
    ("REVERT_HEAD", "a revert"),
    ("BISECT_LOG", "a bisect"),
)


def git_dir(worktree: Path) -> Path | None:
    """The git folder of the working tree ``worktree``: its ``.git`` folder, or the folder a
    ``.git`` file names (a linked worktree, a submodule); None when there is none."""
    dot = worktree / ".git"
    try:
        st = os.lstat(dot)
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode):
        return dot
    if not stat.S_ISREG(st.st_mode):
        return None
    text = _read_small(dot)
    if text is None or not text.startswith("gitdir:"):
        return None
    target = Path(text[len("gitdir:") :].strip())
    return target if target.is_absolute() else (worktree / target).resolve()


def unsafe_reason(worktree: Path, rels: Iterable[str] = (), prefix: str = "") -> str | None:
    """Why memdir must not commit to the repository of ``worktree`` now, or None.

    Args:
        worktree: the working tree's top folder.
        rels: the workspace files about to be committed (their folders' ``.gitignore`` are
            checked too).
        prefix: the workspace's folder within the working tree (``notes/`` or empty).
    """
    gitdir = git_dir(worktree)
    if gitdir is None:
        return "the repository's git folder cannot be read"
    owner = _owner_reason(worktree, gitdir)
    if owner:
        return owner
    for name, what in IN_PROGRESS:  # before HEAD: a rebase detaches it, and says more
        if os.path.lexists(gitdir / name):
            return f"{what} is in progress"
    head = _read_small(gitdir / "HEAD")
    if head is None:
        return "HEAD cannot be read"
    if not head.startswith("ref:"):
        return "HEAD is detached (no branch is checked out)"
    return _ignore_reason(worktree, gitdir, rels, prefix)


def _owner_reason(worktree: Path, gitdir: Path) -> str | None:
    """git's ``safe.directory`` rule: the repository must belong to this user (root may use
    its own), unless a global or system config lists it (or ``*``)."""
    try:
        owner = os.stat(gitdir).st_uid
    except OSError:
        return "the repository's git folder cannot be read"
    me = os.geteuid()
    if owner == me:
        return None
    sudo = os.environ.get("SUDO_UID")
    if me == 0 and sudo is not None and sudo.isdigit() and int(sudo) == owner:
        return None  # git allows root, under sudo, the repositories of the user who ran it
    allowed = _config_values(_global_configs(), "safe", "directory")
    if "*" in allowed or str(worktree) in allowed or f"{worktree}/" in allowed:
        return None
    return (
        f"the repository {worktree} belongs to another user (uid {owner}); git itself refuses "
        "it (safe.directory)"
    )


def _ignore_reason(worktree: Path, gitdir: Path, rels: Iterable[str], prefix: str) -> str | None:
    """A git config or ignore file that is not a regular file of bounded size, said so."""
    configs = [gitdir / "config", *_global_configs()]
    candidates = [*configs, gitdir / "info" / "exclude", _default_global_ignore()]
    for value in _config_values(configs, "core", "excludesfile"):
        candidates.append(Path(os.path.expanduser(value)))
    folders = {worktree}
    for rel in rels:
        parts = Path(prefix + rel).parts[:-1]
        for n in range(len(parts) + 1):
            folders.add(worktree.joinpath(*parts[:n]))
    candidates += [folder / ".gitignore" for folder in sorted(folders)]
    for path in candidates:
        problem = _not_readable(path)
        if problem:
            return f"git's settings or ignore rules cannot be read safely: {path} is {problem}"
    return None


def _not_readable(path: Path) -> str | None:
    """Why ``path`` must not be read (a special file, too large), or None (absent is fine)."""
    try:
        st = os.stat(path)  # a link is followed, as git follows it; its target is checked
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return describe_mode(st.st_mode)
    if st.st_size > MAX_GIT_FILE:
        return f"larger than {MAX_GIT_FILE // 1024} KiB"
    return None


def _read_small(path: Path) -> str | None:
    """The text of a small regular file, or None (absent, special, too large, unreadable)."""
    if _not_readable(path) is not None:
        return None
    try:
        with open(path, "rb") as fh:
            return fh.read(MAX_GIT_FILE).decode("utf-8", "replace")
    except OSError:
        return None


def _global_configs() -> list[Path]:
    """The global and system git config files git would read."""
    home = Path(os.path.expanduser("~"))
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    paths = [home / ".gitconfig", Path(xdg) / "git" / "config", Path("/etc/gitconfig")]
    for env in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"):
        value = os.environ.get(env)
        if value:
            paths.append(Path(value))
    return paths


def _default_global_ignore() -> Path:
    home = Path(os.path.expanduser("~"))
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    return Path(xdg) / "git" / "ignore"


def _config_values(paths: Iterable[Path], section: str, key: str) -> list[str]:
    """Every value of ``section.key`` in these git config files (a plain reading of git's INI
    format: enough for the two keys read here)."""
    out: list[str] = []
    for path in paths:
        text = _read_small(path)
        if text is None:
            continue
        current = ""
        for raw in text.splitlines():
            line = raw.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                current = line[1:].split("]", 1)[0].strip().split(" ", 1)[0].lower()
                continue
            name, _, value = line.partition("=")
            if current == section and name.strip().lower() == key:
                out.append(value.strip().strip('"'))
    return out


__all__ = ["IN_PROGRESS", "git_dir", "unsafe_reason"]
