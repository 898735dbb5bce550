"""The service's own team sync (docs/design.md#team-memory): every open workspace whose
repository has the configured remote is synced every ``[team] interval_seconds`` (60).

The sync runs beside the requests, not inside one: it takes the workspace write lock only
to merge (the fetch and the push wait for the network outside it), and the workspace's file
watcher indexes what it brought, as it indexes a person's edits. A failure (the remote out of
reach, a secret refused) is logged and tried again at the next interval.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from memdir.audit.where import git_worktree
from memdir.config.settings import load_config
from memdir.errors import MemdirError
from memdir.safety.privacy import SecretGuard
from memdir.service.pool import Pool
from memdir.team import sync_workspace
from memdir.team.transport import remote_configured
from memdir.workspace.layout import Workspace

log = logging.getLogger("memdir.service")

#: How often the service looks for a workspace that is due.
TICK_S = 5.0


class TeamSyncer:
    """When each served workspace was last synced, and the sync of those that are due."""

    def __init__(self) -> None:
        self.last: dict[Path, float] = {}

    def tick(self, pool: Pool, now: float | None = None) -> list[Path]:
        """Sync the served workspaces that are due; returns those synced (or tried)."""
        at = time.monotonic() if now is None else now
        done: list[Path] = []
        for root in sorted({warm.root for warm in pool.served() if warm.scope == "private"}):
            try:
                config = load_config(root)
            except MemdirError:
                continue
            team = config.team
            if not team.interval_seconds or at - self.last.get(root, -1e18) < team.interval_seconds:
                continue
            self.last[root] = at
            workspace = Workspace(root)
            if git_worktree(workspace) != root or not remote_configured(root, team.remote):
                continue
            done.append(root)
            try:
                report = sync_workspace(
                    workspace,
                    remote=team.remote,
                    branch=team.branch,
                    guard=SecretGuard(config.privacy.secrets, config.privacy.secret_patterns),
                )
            except (MemdirError, OSError) as exc:
                log.warning("memdir service: team sync of %s failed: %s", root, exc)
                continue
            if report.refused:
                log.warning("memdir service: team sync of %s: %s", root, report.refused)
            elif report.files or report.pushed:
                log.info(
                    "memdir service: team sync of %s: %d files in, pushed %s",
                    root,
                    len(report.files),
                    report.pushed,
                )
        return done


__all__ = ["TICK_S", "TeamSyncer"]
