"""memdir's entries in Claude Code's settings: ``memdir hooks install|uninstall claude-code``.

Claude Code reads hooks from ``settings.json`` (the project's ``.claude/settings.json``, or the
user's ``~/.claude/settings.json``)::

    {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "…", "timeout": 15}]}]}}

:func:`install_hooks` adds one entry per event of :data:`EVENTS`, whose command runs this memdir
(its absolute path) on the workspace given at install time: ``/…/bin/memdir hook session-start
--workspace /home/you/notes``. Everything else in the file is kept as it was; installing again
replaces memdir's entries (a new workspace or executable) and writes nothing when they are
already there. :func:`uninstall_hooks` removes exactly memdir's entries: a command is memdir's
when it runs a ``memdir`` executable (or ``python -m memdir``) with ``hook <event>``.

The timeouts Claude Code is told leave room for the bounded model calls (``[hooks]
flush_timeout``, ``slug_timeout``) and a cold start.

With the per-user service (``--http``, docs/design.md#the-per-user-service), UserPromptSubmit,
PreCompact and SessionEnd are HTTP hooks instead (``{"type": "http", "url":
"http://127.0.0.1:<port>/v1/hooks/claude-code/<event>?workspace=…"}``), answered by the warm
service without a process; SessionStart stays a command (Claude Code 2.1.197 skips HTTP hooks
for it), which starts the service when none runs. An HTTP hook whose service is down fails at
once and Claude Code goes on without it. The token is written into the entries' own
``Authorization`` header, not read from an environment variable: some of Claude Code's code
paths (``claude mcp list`` runs SessionEnd) do not apply a settings file's ``env``, and the
hook then went out without it (HTTP 401). So the entries go into a settings file that is not
shared (:func:`token_settings_path`, made 0600) and memdir's entries leave the shared one. An
entry is memdir's when its command runs memdir's ``hook`` or its URL is memdir's hook route on
the loopback address.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from memdir.config.settings import HooksConfig
from memdir.errors import ConfigError, MemdirError
from memdir.workspace.fileio import atomic_write

#: Seconds a cold ``memdir hook`` process needs besides its bounded work (imports, start-up).
STARTUP_ALLOWANCE_S = 15
#: Seconds an HTTP hook gets besides its bounded work (the service is warm).
HTTP_ALLOWANCE_S = 5
#: The events Claude Code runs as HTTP hooks (it skips HTTP hooks for SessionStart).
HTTP_EVENTS = ("UserPromptSubmit", "PreCompact", "SessionEnd")
#: The path of the service's hook route, and the variable earlier installs kept the token in.
HOOK_ROUTE = "/v1/hooks/claude-code/"
TOKEN_VAR = "MEMDIR_TOKEN"


@dataclass(frozen=True)
class HookEvent:
    """One Claude Code hook event memdir handles.

    Attributes:
        name: Claude Code's name for it (``SessionStart``).
        command: the ``memdir hook`` sub-command (``session-start``).
        does: what memdir does then, in a few words.
    """

    name: str
    command: str
    does: str

    def timeout(self, config: HooksConfig, *, http: bool = False) -> int:
        """Seconds Claude Code lets the command (or the HTTP request) run."""
        bounded = {
            "user-prompt-submit": config.recall_timeout,
            "pre-compact": config.flush_timeout,
            "session-end": config.slug_timeout,
        }
        allowance = HTTP_ALLOWANCE_S if http else STARTUP_ALLOWANCE_S
        return allowance + math.ceil(bounded.get(self.command, 0.0))


EVENTS = (
    HookEvent("SessionStart", "session-start", "adds MEMORY.md and the recent daily logs"),
    HookEvent("UserPromptSubmit", "user-prompt-submit", "adds the memories relevant to a prompt"),
    HookEvent("PreCompact", "pre-compact", "flushes durable facts to today's daily log"),
    HookEvent("SessionEnd", "session-end", "archives the session to memory/<date>-<slug>.md"),
)
EVENT_COMMANDS = tuple(event.command for event in EVENTS)


@dataclass
class SettingsChange:
    """What install or uninstall did to a settings file.

    Attributes:
        path: the settings file.
        changed: the file was written (False: it already was as asked).
        added: commands added (install).
        removed: commands of memdir's that were removed (replaced ones included).
    """

    path: Path
    changed: bool = False
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def settings_path(scope: str, project: Path) -> Path:
    """Claude Code's settings file for ``scope``: ``project`` → ``<project>/.claude/settings.json``,
    ``user`` → ``~/.claude/settings.json``."""
    if scope == "user":
        return Path.home() / ".claude" / "settings.json"
    if scope == "project":
        return project / ".claude" / "settings.json"
    raise ConfigError(f"unknown scope {scope!r}: choose project or user")


def memdir_executable() -> list[str]:
    """How a hook runs this memdir, by absolute path: the ``memdir`` script this process was
    started as, else the one beside this Python, else ``python -m memdir``."""
    started = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if started is not None and started.name == "memdir" and started.is_file():
        return [str(started.absolute())]
    beside = Path(sys.executable).parent / ("memdir.exe" if sys.platform == "win32" else "memdir")
    if beside.is_file():
        return [str(beside)]
    return [sys.executable, "-m", "memdir"]


def hook_command(executable: Sequence[str], event: HookEvent, workspace: Path) -> str:
    """The shell command of one hook entry."""
    return shlex.join([*executable, "hook", event.command, "--workspace", str(workspace)])


def hook_url(port: int, event: HookEvent, workspace: Path) -> str:
    """The service's URL for one HTTP hook entry."""
    where = quote(str(workspace), safe="/")
    return f"http://127.0.0.1:{port}{HOOK_ROUTE}{event.command}?workspace={where}"


def http_entry(
    port: int, event: HookEvent, workspace: Path, config: HooksConfig, token: str
) -> dict[str, Any]:
    """An HTTP hook entry, the token in its own header (see the module docstring)."""
    return {
        "type": "http",
        "url": hook_url(port, event, workspace),
        "headers": {"Authorization": f"Bearer {token}"},
        "timeout": event.timeout(config, http=True),
    }


def is_memdir_url(url: str) -> bool:
    """Whether a hook URL is the service's hook route on the loopback address."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.hostname in ("127.0.0.1", "localhost") and parts.path.startswith(HOOK_ROUTE)


def token_settings_path(path: Path) -> Path:
    """Where the token goes for the hooks in the settings file ``path``: a project's
    ``settings.json`` → its ``settings.local.json`` (Claude Code keeps that one out of git);
    any other file → itself (the user's own ``~/.claude/settings.json``, or a file named with
    ``--settings``)."""
    if (
        path.name == "settings.json"
        and path.parent.name == ".claude"
        and path.parent.parent != (Path.home())
    ):
        return path.with_name("settings.local.json")
    return path


def unset_token_env(path: Path) -> bool:
    """Take ``MEMDIR_TOKEN`` (where earlier installs put the token) out of the ``env`` of the
    settings at ``path``; whether it was there. Never raises (a file that is not as expected
    is left alone)."""
    try:
        data = _load(path) if path.exists() else {}
    except MemdirError:
        return False
    env = data.get("env")
    if not isinstance(env, dict) or TOKEN_VAR not in env:
        return False
    del env[TOKEN_VAR]
    if not env:
        del data["env"]
    try:
        _save(path, data)
    except MemdirError:
        return False
    return True


def is_memdir_hook(command: str) -> bool:
    """Whether a hook command is one memdir installs: a ``memdir`` executable (or ``python -m
    memdir``) followed by ``hook <event>``."""
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if words and Path(words[0]).name in ("memdir", "memdir.exe"):
        rest = words[1:]
    elif words[1:3] == ["-m", "memdir"]:
        rest = words[3:]
    else:
        return False
    return len(rest) >= 2 and rest[0] == "hook" and rest[1] in EVENT_COMMANDS


def install_hooks(
    path: Path,
    workspace: Path,
    *,
    config: HooksConfig,
    executable: Sequence[str] | None = None,
    http_port: int | None = None,
    http_token: str = "",
) -> SettingsChange:
    """Write memdir's hook entries for ``workspace`` into the Claude Code settings at ``path``;
    with ``http_port``, HTTP hooks to the service on that port for :data:`HTTP_EVENTS`, sending
    ``http_token`` (the file is then made readable by its owner only).

    Raises:
        MemdirError: the file is not a JSON object of the expected shape (nothing is written),
            or it cannot be written.
    """
    runner = list(executable) if executable is not None else memdir_executable()
    data = _load(path)
    before = json.dumps(data, sort_keys=True)
    change = SettingsChange(path)
    hooks = _hooks_table(data, path)
    for event in EVENTS:
        groups = _groups(hooks, event.name, path)
        entry: dict[str, Any]
        if http_port is not None and event.name in HTTP_EVENTS:
            command = hook_url(http_port, event, workspace)
            entry = http_entry(http_port, event, workspace, config, http_token)
        else:
            command = hook_command(runner, event, workspace)
            entry = {"type": "command", "command": command, "timeout": event.timeout(config)}
        replaced = _remove_memdir_entries(groups, keep_first_as=entry)
        change.removed.extend(c for c in replaced if c != command)
        if not replaced:
            groups.append({"hooks": [entry]})
        change.added.append(command)
    change.changed = json.dumps(data, sort_keys=True) != before
    if change.changed:
        _save(path, data)
    if http_port is not None:
        target = path.resolve()
        if target.stat().st_mode & 0o077:  # it holds the token: only its owner reads it
            os.chmod(target, 0o600)
    return change


def uninstall_hooks(path: Path) -> SettingsChange:
    """Remove memdir's hook entries from the settings at ``path``; nothing else changes (an
    event or matcher group left empty by the removal goes too).

    Raises:
        MemdirError: the file is not a JSON object of the expected shape, or cannot be written.
    """
    change = SettingsChange(path)
    if not path.exists():
        return change
    data = _load(path)
    hooks = _hooks_table(data, path)
    for name in list(hooks):
        groups = _groups(hooks, name, path)
        removed = _remove_memdir_entries(groups)
        change.removed.extend(removed)
        if removed and not groups:
            del hooks[name]
    if change.removed:
        if not hooks:
            del data["hooks"]
        _save(path, data)
        change.changed = True
    return change


def _remove_memdir_entries(
    groups: list[Any], *, keep_first_as: dict[str, Any] | None = None
) -> list[str]:
    """Take memdir's entries out of ``groups`` (in place) and drop the groups that held only
    them; with ``keep_first_as``, the first one is replaced by it where it stands instead (so
    installing twice changes nothing). Returns the commands that were there."""
    found: list[str] = []
    for group in list(groups):
        entries = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(entries, list):
            continue
        kept: list[Any] = []
        for entry in entries:
            command = _memdir_entry(entry)
            if command is None:
                kept.append(entry)
                continue
            if keep_first_as is not None and not found:
                kept.append(keep_first_as)
            found.append(command)
        group["hooks"] = kept
        if not kept:
            groups.remove(group)
    return found


def _memdir_entry(entry: Any) -> str | None:
    """The command or URL of a hook entry of memdir's, or None for anyone else's."""
    if not isinstance(entry, dict):
        return None
    command, url = entry.get("command"), entry.get("url")
    if isinstance(command, str) and is_memdir_hook(command):
        return command
    if entry.get("type") == "http" and isinstance(url, str) and is_memdir_url(url):
        return url
    return None


def _load(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise MemdirError(f"cannot read {path}: {exc.strerror}") from exc
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise MemdirError(
            f"{path} is not valid JSON ({exc}): fix it or move it away; nothing was changed"
        ) from exc
    if not isinstance(data, dict):
        raise MemdirError(f"{path} does not hold a JSON object; nothing was changed")
    return data


def _hooks_table(data: dict[str, Any], path: Path) -> dict[str, Any]:
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise MemdirError(f'{path}: "hooks" is not an object; nothing was changed')
    return hooks


def _groups(hooks: dict[str, Any], name: str, path: Path) -> list[Any]:
    groups = hooks.setdefault(name, [])
    if not isinstance(groups, list):
        raise MemdirError(f'{path}: "hooks.{name}" is not a list; nothing was changed')
    return groups


def _save(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` atomically; through a symlink to its target (dotfiles kept elsewhere)."""
    target = path.resolve() if path.is_symlink() else path
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise MemdirError(f"cannot write {path}: {exc.strerror}") from exc
