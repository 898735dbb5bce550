"""Small helpers shared by tests (fixtures live in conftest.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

#: How the tests find Claude Code: (variable naming the executable, its name on PATH, package).
CLAUDE_CODE = ("MEMDIR_TEST_CLAUDE", "claude", "@anthropic-ai/claude-code")


def write(root: Path, rel: str, text: str) -> Path:
    """Write a workspace file (creating folders) and return its path."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def node_client(env_var: str, name: str, package: str) -> str:
    """The executable of a Node.js client (``env_var``, else ``name`` on PATH), or skip the
    test saying how to install it."""
    found = os.environ.get(env_var) or shutil.which(name)
    if not found:
        pytest.skip(
            f"{package} is not installed: npm install -g {package}, or set {env_var} to its "
            f"`{name}` executable (.ci/run installs Claude Code)"
        )
    return found


def memory_chunks(root: Path) -> int:
    """How many chunks the workspace's MEMORY.md makes (none for the bare template: a section
    with nothing in it is not indexed)."""
    from memdir.config.settings import ChunkingConfig
    from memdir.index.sync import chunk_file

    memory = root / "MEMORY.md"
    if not memory.is_file():
        return 0
    return len(chunk_file("MEMORY.md", memory.read_text(encoding="utf-8"), ChunkingConfig()))


def wait_for(condition: Callable[[], object], seconds: float = 10.0) -> bool:
    """Poll ``condition`` every 50 ms for up to ``seconds``; whether it came true."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return bool(condition())


def run_git(cwd: Path, *args: str, check: bool = True) -> str:
    """Run the real ``git`` (tests check memdir's commits with git itself)."""
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=60
    )
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def isolate_git(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """git with an identity and no user or system config (skips where git is missing)."""
    if shutil.which("git") is None:
        pytest.skip("the git binary is not installed")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(folder / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for key, value in (
        ("GIT_AUTHOR_NAME", "Pat Person"),
        ("GIT_AUTHOR_EMAIL", "pat@example.org"),
        ("GIT_COMMITTER_NAME", "Pat Person"),
        ("GIT_COMMITTER_EMAIL", "pat@example.org"),
    ):
        monkeypatch.setenv(key, value)
