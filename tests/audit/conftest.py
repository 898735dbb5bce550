"""Fixtures for the audit trail: a workspace inside a real git repository."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from memdir import init_workspace

GitRunner = Callable[..., str]


def run_git(cwd: Path, *args: str, check: bool = True) -> str:
    """Run the real ``git`` (tests check memdir's commits with git itself)."""
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=60
    )
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout


@pytest.fixture
def git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> GitRunner:
    """``git(cwd, *args)`` with an identity and no user or system config."""
    if shutil.which("git") is None:
        pytest.skip("the git binary is not installed (memdir itself does not need it)")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for key, value in (
        ("GIT_AUTHOR_NAME", "Pat Person"),
        ("GIT_AUTHOR_EMAIL", "pat@example.org"),
        ("GIT_COMMITTER_NAME", "Pat Person"),
        ("GIT_COMMITTER_EMAIL", "pat@example.org"),
    ):
        monkeypatch.setenv(key, value)
    return run_git


@pytest.fixture
def repo(tmp_path: Path, git: GitRunner) -> Path:
    """A git repository with one commit of the person's (notes.txt) and a memdir workspace in
    its subfolder ``ws`` whose files are committed too."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "notes.txt").write_text("the person's file\n", encoding="utf-8")
    init_workspace(root / "ws")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "person: start")
    return root
