"""The settings of the ways an agent meets memdir outside the library: Claude Code's hooks
(``[hooks]``) and the per-user service (``[service]``); :mod:`memdir.config.settings` loads them
with the rest (docs/design.md#config).
"""

from __future__ import annotations

from dataclasses import dataclass

from memdir.errors import ConfigError

#: The most results one search returns, for every caller: the library, the CLI, the MCP server,
#: the chat agent, the web page (the tool contract, :mod:`memdir.tools`, states it to models).
MAX_RESULTS = 50

#: The most characters Claude Code puts in the context from one hook's output; a longer output
#: is saved to a file and only a preview reaches the model (Claude Code 2.1.197).
CLAUDE_CODE_HOOK_CHARS = 10_000


@dataclass(frozen=True)
class HooksConfig:
    """The Claude Code hooks (``memdir hook <event>``; README, "Claude Code hooks").

    ``session_start_chars``: the memory context at session start (MEMORY.md, USER.md, today's
    and yesterday's daily logs) in at most this many characters (Claude Code keeps at most
    10,000). ``recall``: auto-recall before each prompt, at most ``recall_max_items`` hits
    scoring at least ``recall_min_score`` (a calibrated relevance with the default model: a 30 %
    chance of answering; OpenClaw's auto-recall threshold), in at most ``recall_max_chars``
    characters.
    ``flush_input_tokens``: the memory flush before a compaction shows the model the most recent
    part of the transcript within this many tokens. ``recall_timeout``, ``flush_timeout`` and
    ``slug_timeout`` bound the search, the flush and the archive's slug (seconds; the installed
    hooks allow Claude Code a little more).
    """

    session_start_chars: int = 9_000
    recall: bool = True
    recall_max_items: int = 3
    recall_min_score: float = 0.3
    recall_max_chars: int = 1_500
    recall_timeout: float = 10.0
    flush_input_tokens: int = 32_000
    flush_timeout: float = 45.0
    slug_timeout: float = 10.0

    def __post_init__(self) -> None:
        problems = []
        if not 500 <= self.session_start_chars <= CLAUDE_CODE_HOOK_CHARS:
            problems.append(f"500 ≤ session_start_chars ≤ {CLAUDE_CODE_HOOK_CHARS:,}")
        if not 1 <= self.recall_max_items <= MAX_RESULTS:
            problems.append(f"1 ≤ recall_max_items ≤ {MAX_RESULTS}")
        if not 0 <= self.recall_min_score <= 1:
            problems.append("0 ≤ recall_min_score ≤ 1")
        if not 200 <= self.recall_max_chars <= CLAUDE_CODE_HOOK_CHARS:
            problems.append(f"200 ≤ recall_max_chars ≤ {CLAUDE_CODE_HOOK_CHARS:,}")
        if self.flush_input_tokens < 1_000:
            problems.append("flush_input_tokens ≥ 1000")
        if not 0 < self.recall_timeout <= 60 or not 0 < self.slug_timeout <= 60:
            problems.append("0 < recall_timeout ≤ 60 and 0 < slug_timeout ≤ 60")
        if not 0 < self.flush_timeout <= 600:
            problems.append("0 < flush_timeout ≤ 600")
        if problems:
            raise ConfigError("hooks: need " + ", ".join(problems))


@dataclass(frozen=True)
class ServiceConfig:
    """The per-user service (``memdir daemon``; docs/design.md#the-per-user-service), read from
    ``$MEMDIR_HOME/config.toml``.

    ``port``: where it listens on 127.0.0.1; 0 (the default): the port this home used last,
    else 8766, else any free one (:mod:`memdir.service.ports`). ``idle_minutes``: a workspace
    without a request for this long is closed (its model and index freed); an idle service
    started on demand stops after ``idle_minutes`` too. ``max_workspaces``: at most this many
    workspaces are kept open; asking for one more closes the least recently used one not in use
    (each holds a model, an index connection and a few threads). ``autostart``: a Claude Code
    command hook that finds no service starts one in the background, so the next hooks are
    answered warm.
    """

    port: int = 0
    idle_minutes: float = 30.0
    max_workspaces: int = 16
    autostart: bool = True

    def __post_init__(self) -> None:
        if self.port != 0 and not 1024 <= self.port <= 65535:
            raise ConfigError("service: need port = 0 (memdir chooses) or 1024 ≤ port ≤ 65535")
        if not 1 <= self.idle_minutes <= 7 * 24 * 60:
            raise ConfigError("service: need 1 ≤ idle_minutes ≤ 10080")
        if not 1 <= self.max_workspaces <= 1000:
            raise ConfigError("service: need 1 ≤ max_workspaces ≤ 1000")


@dataclass(frozen=True)
class TeamConfig:
    """One memory for a team, kept in step through git (``memdir team``;
    docs/design.md#team-memory).

    ``remote``: the git remote of the workspace's repository to pull from and push to — a
    remote's name (default ``origin``) or any URL or path git takes. ``branch``: its branch
    (empty: the branch checked out). ``interval_seconds``: how often the per-user service syncs
    each open workspace whose repository has that remote (0: never on its own). Only the user's
    own config may set these (a cloned workspace must not choose where your notes are pushed).
    """

    remote: str = "origin"
    branch: str = ""
    interval_seconds: float = 60.0

    def __post_init__(self) -> None:
        if not self.remote.strip() or self.remote.startswith("-"):
            raise ConfigError("team: remote must name a git remote, a URL or a path")
        if self.branch.startswith("-") or " " in self.branch:
            raise ConfigError("team: branch must be a branch name")
        if not (self.interval_seconds == 0 or 5 <= self.interval_seconds <= 24 * 3600):
            raise ConfigError("team: need interval_seconds = 0 (off) or 5 ≤ it ≤ 86400")
