"""Hosts of one team memory: clones of one bare repository on disk (a real git remote), each
a memdir workspace, written through memdir and synced with ``memdir team sync``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memdir import FakeEmbedder, Memory, init_workspace
from tests.helpers import isolate_git, run_git

MARKERS = ("<<<<<<<", "=======", ">>>>>>>")


@dataclass
class Host:
    """One host's clone of the team's repository."""

    name: str
    root: Path

    def memory(self) -> Memory:
        return Memory(self.root, embedder=FakeEmbedder())

    def git(self, *args: str, check: bool = True) -> str:
        return run_git(self.root, *args, check=check)

    def text(self, rel: str) -> str:
        path = self.root / rel
        return path.read_text(encoding="utf-8") if path.exists() else ""

    def sync(self) -> object:
        with self.memory() as mem:
            return mem.team_sync()


@pytest.fixture
def team_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """git with an identity and no user or system config."""
    isolate_git(monkeypatch, tmp_path)
    monkeypatch.setenv("MEMDIR_NOW", "2026-12-04T10:00:00")


def make_team(base: Path, names: tuple[str, ...]) -> tuple[Path, list[Host]]:
    """A bare remote with the first host's new workspace pushed, and the others' clones."""
    remote = base / "remote.git"
    run_git(base, "init", "-q", "--bare", "-b", "main", str(remote))
    first = base / names[0]
    init_workspace(first)
    run_git(first, "init", "-q", "-b", "main")
    run_git(first, "add", "-A")
    run_git(first, "commit", "-q", "-m", "team memory")
    run_git(first, "remote", "add", "origin", str(remote))
    run_git(first, "push", "-q", "origin", "main")
    hosts = [Host(names[0], first)]
    for name in names[1:]:
        run_git(base, "clone", "-q", str(remote), str(base / name))
        hosts.append(Host(name, base / name))
    return remote, hosts


@pytest.fixture
def team(team_env: None, tmp_path: Path) -> Iterator[tuple[Path, list[Host]]]:
    yield make_team(tmp_path, ("a", "b", "c"))
