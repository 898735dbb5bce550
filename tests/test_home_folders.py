"""A home folder is never a workspace (issue 35): a user's home counted as one because
``~/.memdir`` (memdir's own home) exists, and an HTTP MCP request naming it created index files
inside memdir's home. Refused everywhere a workspace is named, before anything is made."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memdir import Memory, init_workspace
from memdir.cli import cli
from memdir.errors import WorkspaceError
from memdir.workspace.layout import Workspace, home_folder


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``folder`` with its size and mtime."""
    out = {}
    for path in [folder, *folder.rglob("*")]:
        info = path.lstat()
        out[str(path.relative_to(folder))] = (info.st_size, info.st_mtime_ns)
    return out


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's home as memdir leaves it: ``~/.memdir`` (the default ``MEMDIR_HOME``) with its
    config and default workspace."""
    home = tmp_path / "home" / "ann"
    state = home / ".memdir"
    state.mkdir(parents=True)
    (state / "config.toml").write_text('[embedding]\nprovider = "fake"\n')
    init_workspace(state / "workspace", "en")
    (home / "todo.txt").write_text("buy milk\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("MEMDIR_HOME", raising=False)
    monkeypatch.delenv("MEMDIR_WORKSPACE", raising=False)
    monkeypatch.setenv("MEMDIR_SERVICE", "off")
    return home


def test_a_home_with_memdir_s_state_is_refused(user_home: Path) -> None:
    before = snapshot(user_home)
    assert home_folder(user_home) == "a user's home folder"
    for opening in (Workspace, Memory):
        with pytest.raises(WorkspaceError, match="is a user's home folder: memdir does not use"):
            opening(user_home)
    with pytest.raises(WorkspaceError, match="home folder"):
        init_workspace(user_home, "en")
    assert snapshot(user_home) == before  # nothing made there, nothing in ~/.memdir either
    assert home_folder(user_home / ".memdir" / "workspace") == ""  # the default one is fine


@pytest.mark.parametrize(
    "args",
    [
        ["search", "milk"],
        ["remember", "the car is blue"],
        ["status"],
        ["index"],
    ],
    ids=lambda a: a[0],
)
def test_the_cli_says_so_and_makes_nothing(user_home: Path, args: list[str]) -> None:
    before = snapshot(user_home)
    result = CliRunner().invoke(cli, ["-w", str(user_home), *args])
    assert result.exit_code == 1, result.output
    assert "is a user's home folder" in result.output and "memdir init" in result.output
    assert snapshot(user_home) == before


def test_init_in_a_home_is_refused(user_home: Path) -> None:
    before = snapshot(user_home)
    result = CliRunner().invoke(cli, ["init", str(user_home)])
    assert result.exit_code == 1 and "home folder" in result.output
    assert snapshot(user_home) == before


def test_a_hook_in_a_home_notes_it_and_makes_nothing(user_home: Path) -> None:
    """A hook never fails Claude Code (exit 0), and says why on stderr."""
    before = snapshot(user_home)
    hook = b'{"hook_event_name": "SessionStart", "session_id": "h1"}'
    done = subprocess.run(
        [sys.executable, "-m", "memdir", "hook", "session-start", "-w", str(user_home)],
        input=hook,
        capture_output=True,
        env=dict(os.environ),
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout == b""
    assert b"home folder" in done.stderr
    assert snapshot(user_home) == before


def test_memdir_s_own_home_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own = tmp_path / "state"
    own.mkdir()
    (own / "memory").mkdir()  # looks like a workspace
    monkeypatch.setenv("MEMDIR_HOME", str(own))
    with pytest.raises(WorkspaceError, match=r"memdir's own home \(MEMDIR_HOME\)"):
        Workspace(own)
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / ".memdir").symlink_to(own)
    with pytest.raises(WorkspaceError, match="the folder that holds memdir's own home"):
        Workspace(linked)


def test_the_user_database_s_home_counts_whatever_home_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pwd = pytest.importorskip("pwd")
    real = Path(pwd.getpwuid(os.getuid()).pw_dir)
    if not real.is_dir():
        pytest.skip(f"this user's home {real} does not exist")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("MEMDIR_HOME", str(tmp_path / "mh"))
    with pytest.raises(WorkspaceError, match="is a user's home folder"):
        Workspace(real)
