"""The governance methods of the :class:`~memdir.memory.facade.Memory` facade: the history of
automatic writes (``memdir log``), ``memdir forget`` and ``memdir review``
(docs/governance.md).

:class:`GovernanceMixin` is part of ``Memory`` (it keeps the facade's module small); its methods
need only what :class:`_Governed` names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from memdir.clock import now
from memdir.config.settings import Config
from memdir.errors import MemdirError, PathNotAllowed, QueryError
from memdir.index.sync import scan_dirty
from memdir.memory.browse import PRIVATE_FILES
from memdir.workspace.layout import Workspace

if TYPE_CHECKING:
    from memdir.audit import AuditRecord
    from memdir.dreaming.store import RecallStore
    from memdir.index.manager import IndexManager
    from memdir.index.sync import SyncReport
    from memdir.lifecycle.forget import ForgetResult
    from memdir.review import ReviewReport
    from memdir.search.types import SearchResponse
    from memdir.team import TeamReport


class _Governed(Protocol):
    """What :class:`GovernanceMixin` needs of the facade."""

    workspace: Workspace
    scope: str
    index: IndexManager
    recalls: RecallStore
    config: Config

    def search(
        self,
        query: str | Sequence[str],
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        record: bool = True,
    ) -> SearchResponse: ...

    def sync(self) -> SyncReport: ...


class GovernanceMixin:
    """``Memory``'s governance methods."""

    def log(
        self: _Governed, path: str | None = None, *, limit: int | None = None
    ) -> list[AuditRecord]:
        """The history of automatic writes, newest first (``memdir log``).

        Args:
            path: only the writes that changed this file (or a file under this folder).
            limit: at most this many records.
        """
        shown = None
        if path:
            target = path.strip()
            # A memory path is checked like memory_get's; a folder (memory/) is taken as given.
            if target.lower().endswith(".md"):
                target = self.workspace.display_path(self.workspace.resolve_memory_path(target))
            shown = target
        if self.scope == "shared" and shown in PRIVATE_FILES:
            raise PathNotAllowed(f"{shown}: not available in a shared session")
        from memdir.audit.trail import read_trail

        records = read_trail(self.workspace, path=shown, limit=limit)
        if self.scope == "shared":  # the private files' lines are not shown
            records = [
                replace(r, files=tuple(f for f in r.files if f.path not in PRIVATE_FILES))
                for r in records
                if any(f.path not in PRIVATE_FILES for f in r.files)
            ]
        return records

    def forget(
        self: _Governed,
        target: str,
        *,
        apply: bool = False,
        force: bool = False,
        max_results: int = 10,
        via: str = "Memory.forget",
    ) -> ForgetResult:
        """``memdir forget``: the lines ``target`` names, removed with ``apply``.

        Args:
            target: ``PATH#Lx`` / ``PATH#Lx-Ly``, or a query (its best hits' lines that carry
                most of its terms).
            apply: remove them (default: only show them).
            force: also remove lines a person wrote (default: only lines memdir wrote).
            max_results: how many search hits a query looks at.
            via: what asked, for the audit record.

        The removal is one audited ``forget`` write (undo: ``git revert``, or the removed text
        in ``memdir log --lines``); the index is updated at once and the recall store forgets
        the lines for good, so dreaming never promotes them again.

        Raises:
            PathNotAllowed: in a shared session, or a path outside the memory files.
            MemdirError: an empty target, a line range past the end of the file.
        """
        from memdir.audit.provenance import Provenance
        from memdir.audit.trail import read_trail
        from memdir.dreaming.promotion import forget_key, plain_text
        from memdir.lifecycle.forget import ForgetResult, find_targets, remove_lines

        if self.scope == "shared":
            raise PathNotAllowed("forget is not available in a shared session")
        target = target.strip()
        if not target:
            raise MemdirError("nothing to forget: give PATH#Lx[-Ly] or a query")
        provenance = Provenance.from_records(read_trail(self.workspace, with_lines=True))
        found = find_targets(
            self.workspace,
            target,
            provenance,
            lambda q: self.search(q, max_results=max_results, min_score=0.0, record=False),
        )
        if not apply or not found:
            return ForgetResult(target, found)
        result = remove_lines(
            self.workspace,
            found,
            force=force,
            summary=_short(target),
            via=via,
            provenance=provenance,
        )
        if result.removed:
            self.index.refresh()
            keys = [(x.path, plain_text(x.text), forget_key(x.text)) for x in result.removed]
            try:
                result.recalls_dropped = self.recalls.forget(keys, now=now())
            except Exception as exc:  # the files are changed: report, do not fail
                result.warnings.append(f"the recall store could not be updated: {exc}")
        return result

    def review(
        self: _Governed, *, since: str | None = "7d", todo_days: int | None = None
    ) -> ReviewReport:
        """``memdir review``: near duplicates, likely contradictions, old open todos, the
        MEMORY.md budget, daily notes never recalled, files not indexed (see
        :mod:`memdir.review`). Reads only; never writes.

        Args:
            since: only pairs with a side changed in this window (``7d``, ``2w``, ``12h``, an
                ISO date); ``all`` or None for everything.
            todo_days: todos (and unrecalled daily notes) older than this many days; default
                ``[audit] todo_days`` (14).

        Raises:
            PathNotAllowed: in a shared session (the review reads MEMORY.md).
            QueryError: ``since`` is not a window or a date.
        """
        from memdir.audit.provenance import Provenance
        from memdir.audit.trail import read_trail
        from memdir.review import build_review, parse_since

        if self.scope == "shared":
            raise PathNotAllowed("the review reads MEMORY.md: run it in a private session")
        current = now()
        try:
            start = parse_since(since, current)
        except ValueError:
            raise QueryError(f"--since {since!r}: give 7d, 2w, 12h, an ISO date or all") from None
        from memdir.team.disagreements import open_disagreements

        store = self.index.store()
        report = build_review(
            self.workspace,
            provenance=Provenance.from_records(read_trail(self.workspace)),
            recalls=self.recalls.entries(),
            dirty=scan_dirty(store, self.workspace),
            file_warnings=self.index.read(lambda s: s.file_warnings()),
            now=current,
            since=start,
            since_label=since or "all",
            todo_days=self.config.audit.todo_days if todo_days is None else todo_days,
        )
        report.disagreements = open_disagreements(self.workspace)
        report.counts["disagreements"] = len(report.disagreements)
        return report

    def team_sync(self: _Governed, *, remote: str = "", branch: str = "") -> TeamReport:
        """``memdir team sync``: pull and push the workspace's git repository, merged with
        memdir's rules (docs/design.md#team-memory), then index what changed.

        Args:
            remote: a git remote's name, URL or path; default ``[team] remote``.
            branch: default ``[team] branch``, else the branch checked out.

        Raises:
            WorkspaceError: see :func:`memdir.team.sync_workspace`.
            PathNotAllowed: in a shared session.
        """
        from memdir.safety.privacy import SecretGuard
        from memdir.team import sync_workspace

        if self.scope == "shared":
            raise PathNotAllowed("memdir team sync: run it in a private session")
        team, privacy = self.config.team, self.config.privacy
        report = sync_workspace(
            self.workspace,
            remote=remote or team.remote,
            branch=branch or team.branch,
            guard=SecretGuard(privacy.secrets, privacy.secret_patterns),
        )
        if report.files:
            self.sync()  # a search finds what came in at once (docs/design.md#index)
        return report

    def team_status(self: _Governed) -> dict[str, Any]:
        """What ``memdir team status`` shows: the remote and branch, the last sync, the
        disagreements ``memdir review`` lists."""
        from memdir.team.disagreements import open_disagreements
        from memdir.team.sync import last_sync

        team = self.config.team
        last = last_sync(self.workspace)
        return {
            "remote": team.remote,
            "branch": team.branch or "(checked out)",
            "every": f"{team.interval_seconds:g} s" if team.interval_seconds else "off",
            "last sync": last.get("time", ""),
            "last result": last.get("result", ""),
            "disagreements": len(open_disagreements(self.workspace)),
        }

    def audit_status(self: _Governed) -> dict[str, Any]:
        """Where the audit trail goes (git repository or log file) and what waits to be
        recorded."""
        from memdir.audit.trail import trail_status

        return trail_status(self.workspace)


def _short(target: str, limit: int = 60) -> str:
    """A target as the audit record quotes it."""
    one = " ".join(target.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


__all__ = ["GovernanceMixin"]
