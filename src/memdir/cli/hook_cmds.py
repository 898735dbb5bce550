"""``memdir hooks install|uninstall claude-code`` and ``memdir hook <event>`` (Claude Code)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from memdir.cli.common import made_default_workspace, open_memory, stdout
from memdir.cli.main import CommandGroup, cli
from memdir.config.settings import load_config
from memdir.errors import MemdirError
from memdir.hooks.claude_code import (
    EVENT_COMMANDS,
    EVENTS,
    HTTP_EVENTS,
    install_hooks,
    settings_path,
    token_settings_path,
    uninstall_hooks,
    unset_token_env,
)
from memdir.hooks.events import MAX_INPUT_BYTES, run_hook
from memdir.memory.facade import Memory

AGENTS = ("claude-code",)
F = TypeVar("F", bound=Callable[..., Any])


@cli.group("hooks", cls=CommandGroup)
def hooks_group() -> None:
    """Put memdir's memory lifecycle into an agent's hooks (Claude Code).

    At session start the agent gets MEMORY.md and the recent daily logs; before each prompt,
    the memories relevant to it; before a compaction, a memory flush to today's log; at the
    end, an archive of the session. See `memdir hook`.
    """


def _settings_option(command: F) -> F:
    command = click.option(
        "--scope",
        type=click.Choice(["project", "user"]),
        default="project",
        show_default=True,
        help="project: ./.claude/settings.json; user: ~/.claude/settings.json (every project).",
    )(command)
    return click.option(
        "--settings",
        "settings_file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="The Claude Code settings file to change (instead of --scope's).",
    )(command)


@hooks_group.command("install")
@click.argument("agent", type=click.Choice(AGENTS))
@_settings_option
@click.option(
    "--http",
    is_flag=True,
    help="UserPromptSubmit, PreCompact and SessionEnd as HTTP hooks to the per-user service "
    "(memdir daemon); SessionStart stays a command and starts the service.",
)
@click.pass_context
def install_command(
    ctx: click.Context, agent: str, settings_file: Path | None, scope: str, http: bool
) -> None:
    """Add memdir's hooks for the workspace to Claude Code's settings.

    The entries run this memdir (by its absolute path) with the workspace's absolute path.
    The rest of the file is kept; installing again replaces memdir's entries. With --http,
    three of them are requests to the per-user service instead (answered in milliseconds;
    while the service is down Claude Code goes on without them) that carry the service's
    token, so memdir's entries go to a settings file that is not shared
    (.claude/settings.local.json, mode 0600) and leave .claude/settings.json.
    """
    shared = settings_file or settings_path(scope, Path.cwd())
    path = token_settings_path(shared) if http else shared
    with Memory(ctx.obj) as memory:  # the workspace must exist: its config sets the timeouts
        root = memory.workspace.root
        port = _service_port() if http else None
        token = _service_token() if http else ""
        change = install_hooks(
            path, root, config=memory.config.hooks, http_port=port, http_token=token
        )
    other = token_settings_path(shared) if path == shared else shared  # the other mode's file
    moved = uninstall_hooks(other) if other != path else None
    unset_token_env(token_settings_path(shared))  # where earlier installs kept the token
    out = stdout()
    if moved is not None and moved.removed:
        out.print(f"moved memdir's entries out of {moved.path}", markup=False)
    verb = "updated" if change.changed else "already up to date:"
    out.print(f"{verb} {path}", markup=False)
    for event in EVENTS:
        how = "HTTP" if http and event.name in HTTP_EVENTS else f"memdir hook {event.command}"
        out.print(f"  {event.name}: {how} ({event.does})", markup=False)
    out.print(f"workspace: {root}", markup=False)
    if http:
        out.print(f"service: http://127.0.0.1:{port} (memdir daemon start)", markup=False)
    if change.changed:
        out.print("Claude Code reads hooks at start: restart running sessions", markup=False)


def _service_token() -> str:
    from memdir.service import state

    return state.token()


def _service_port() -> int:
    """The port of this home's service (started when none ever ran, so that it has one)."""
    from memdir.service.daemon import start
    from memdir.service.ports import service_port

    port = service_port()
    if port is None:
        start(exit_when_idle=True)
        port = service_port()
    return port or load_config().service.port


@hooks_group.command("uninstall")
@click.argument("agent", type=click.Choice(AGENTS))
@_settings_option
def uninstall_command(agent: str, settings_file: Path | None, scope: str) -> None:
    """Remove memdir's hook entries (and only them) from Claude Code's settings."""
    path = settings_file or settings_path(scope, Path.cwd())
    change = uninstall_hooks(path)
    local = token_settings_path(path)
    if local != path:
        change.removed.extend(uninstall_hooks(local).removed)  # the --http entries
    unset_token_env(local)
    out = stdout()
    if not change.removed:
        out.print(f"no memdir hooks in {path}", markup=False)
        return
    out.print(f"removed {len(change.removed)} memdir hook(s) from {path}", markup=False)


@hooks_group.command("claude-memory")
@click.option("--add", "action", flag_value="add", help="Index it (adds an extra path).")
@click.option("--remove", "action", flag_value="remove", help="Stop indexing it.")
def claude_memory_command(action: str | None) -> None:
    """Search Claude Code's own auto memory with memdir's (your consent: --add).

    Claude Code keeps its auto memory in ~/.claude/projects/<project>/memory/; memdir never
    turns it off. --add puts the projects folder into [index] extra_paths of
    $MEMDIR_HOME/config.toml (only its Markdown files are indexed: the memory folders), so one
    search covers both; --remove takes it out. Without either, says whether it is indexed.
    """
    from memdir.config.settings import memdir_home
    from memdir.hooks.claude_memory import (
        add_extra_path,
        claude_projects_entry,
        extra_paths,
        memory_folders,
        remove_extra_path,
    )

    config_file = memdir_home() / "config.toml"
    entry = claude_projects_entry()
    out = stdout()
    if action == "add":
        changed = add_extra_path(config_file, entry)
        verb = "added" if changed else "already there:"
        out.print(f"{verb} {entry} in [index] extra_paths of {config_file}", markup=False)
    elif action == "remove":
        changed = remove_extra_path(config_file, entry)
        verb = "removed" if changed else "not there:"
        out.print(f"{verb} {entry} in [index] extra_paths of {config_file}", markup=False)
    indexed = entry in extra_paths(config_file)
    folders = memory_folders(entry)
    out.print(
        f"Claude Code's auto memory: {len(folders)} project folder(s) under {entry}, "
        + ("indexed by memdir" if indexed else "not indexed (memdir hooks claude-memory --add)"),
        markup=False,
    )


@cli.command("hook")
@click.argument("event", type=click.Choice(EVENT_COMMANDS))
@click.option(
    "--detach",
    is_flag=True,
    help="Answer at once and run the hook in the background (the memdir executable forks; "
    "for SessionEnd, which Claude Code cancels after 1.5 s in a plugin).",
)
@click.pass_context
def hook_command(ctx: click.Context, event: str, detach: bool) -> None:
    """Run one Claude Code hook: read its JSON on stdin, answer on stdout.

    `memdir hooks install claude-code` writes these commands into Claude Code's settings;
    Claude Code runs them. session-start adds MEMORY.md and the recent daily logs to the
    context, user-prompt-submit the memories relevant to the prompt, pre-compact flushes
    durable facts to today's log, session-end archives the session. Problems are printed on
    stderr and the exit code is always 0: a hook never stops Claude Code.
    """
    raw = sys.stdin.buffer.read(MAX_INPUT_BYTES).decode("utf-8", errors="replace")
    with contextlib.suppress(MemdirError, OSError):  # else the hook says why, as before
        if made_default_workspace(Path(ctx.obj)):
            click.echo(f"memdir hook {event}: created the default workspace {ctx.obj}", err=True)
    reply = run_hook(event, raw, Path(ctx.obj), open_memory=open_memory)
    text = reply.stdout()
    if text:
        click.echo(text)
    for note in reply.notes:
        click.echo(f"memdir hook {event}: {note}", err=True)
