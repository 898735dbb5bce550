"""The per-user service syncs each open workspace with its team's remote on its own, every
``[team] interval_seconds``, and only a workspace whose repository has that remote."""

from __future__ import annotations

from pathlib import Path

from memdir.service.pool import Pool
from memdir.service.team_sync import TeamSyncer
from tests.team.conftest import Host, run_git


def test_the_service_syncs_open_workspaces_when_they_are_due(
    team: tuple[Path, list[Host]],
) -> None:
    remote, (a, b, _) = team
    with a.memory() as mem:
        mem.write("the nightly backup moved to 03:00")
    pool = Pool(watch=False)
    try:
        pool.get(a.root)
        pool.get(b.root)
        syncer = TeamSyncer()
        assert syncer.tick(pool, now=1000.0) == sorted([a.root.resolve(), b.root.resolve()])
        assert "nightly backup" in run_git(remote, "show", "main:memory/2026-12-04.md")
        assert syncer.tick(pool, now=1030.0) == []  # not due before 60 s
        assert syncer.tick(pool, now=1061.0) != []
        assert "nightly backup" in b.text("memory/2026-12-04.md")
    finally:
        pool.close()


def test_a_workspace_without_the_remote_is_left_alone(team_env: None, tmp_path: Path) -> None:
    from memdir import init_workspace

    root, _ = init_workspace(tmp_path / "solo")
    run_git(root, "init", "-q", "-b", "main")
    pool = Pool(watch=False)
    try:
        pool.get(root)
        assert TeamSyncer().tick(pool, now=1000.0) == []
    finally:
        pool.close()
