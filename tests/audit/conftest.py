"""Fixtures for the audit trail: a workspace inside a real git repository."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from memdir import init_workspace
from tests.helpers import isolate_git, run_git

GitRunner = Callable[..., str]


@pytest.fixture
def git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> GitRunner:
    """``git(cwd, *args)`` with an identity and no user or system config."""
    isolate_git(monkeypatch, tmp_path)
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
