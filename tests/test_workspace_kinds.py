"""file_kind / archive_date (what a workspace file is) and the owner files."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdir.errors import PathNotAllowed
from memdir.workspace.layout import OWNER_FILES, Workspace, archive_date, file_kind


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("MEMORY.md", "memory"),
        ("USER.md", "user"),
        ("AGENTS.md", "agents"),
        ("DREAMS.md", "dreams"),
        ("memory/2026-11-30.md", "daily"),
        ("memory/2026-11-30-redis-port.md", "archive"),
        ("memory/2026-11-30-redis-port-2.md", "archive"),
        ("memory/2026-13-45-x.md", "topic"),
        ("memory/projects.md", "topic"),
        ("memory/team/people.md", "topic"),
        ("skills/deploy/SKILL.md", "skill"),
        ("notes.md", "other"),
    ],
)
def test_file_kind(path: str, kind: str) -> None:
    assert file_kind(path) == kind


def test_archive_date() -> None:
    assert archive_date("memory/2026-11-30-redis-port.md") == "2026-11-30"
    assert archive_date("memory/2026-11-30.md") is None
    assert archive_date("memory/sub/2026-11-30-x.md") is None


def test_owner_files_resolve_inside_the_root(workspace: Path) -> None:
    ws = Workspace(workspace)
    assert [ws.resolve_owner_file(n) for n in OWNER_FILES] == [workspace / n for n in OWNER_FILES]
    with pytest.raises(PathNotAllowed):
        ws.resolve_owner_file("MEMORY.md")
    with pytest.raises(PathNotAllowed):
        ws.resolve_owner_file("../USER.md")


def test_a_symlinked_owner_file_is_refused(workspace: Path, tmp_path: Path) -> None:
    (workspace / "USER.md").unlink()
    (tmp_path / "elsewhere.md").write_text("secret", encoding="utf-8")
    (workspace / "USER.md").symlink_to(tmp_path / "elsewhere.md")
    with pytest.raises(PathNotAllowed, match="symlinks"):
        Workspace(workspace).resolve_owner_file("USER.md")
