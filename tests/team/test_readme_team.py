"""The README's team setup lines, run as they are written: the first host's block on one
home, every other host's on another, the team's remote a bare repository on disk."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.team.conftest import run_git

README = Path(__file__).resolve().parents[2] / "README.md"
URL = "git@git.example.internal:team/memory.git"


def _blocks() -> tuple[str, str]:
    text = README.read_text(encoding="utf-8").split("### Teams: one memory through git", 1)[1]
    first, other = re.findall(r"```bash\n(.*?)```", text, re.S)[:2]
    return first, other


def _run(block: str, home: Path, remote: Path) -> None:
    memdir = Path(sys.executable).parent / "memdir"
    if not memdir.exists():
        pytest.skip("the memdir command is not installed beside this Python")
    env = {
        **os.environ,
        "HOME": str(home),
        "MEMDIR_HOME": str(home / ".memdir"),
        "PATH": f"{memdir.parent}{os.pathsep}{os.environ['PATH']}",
    }
    env.pop("MEMDIR_WORKSPACE", None)
    script = "set -e\n" + block.replace(URL, str(remote))
    done = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_readme_team_lines_make_two_hosts_share_one_memory(
    team_env: None, tmp_path: Path
) -> None:
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    first, other = _blocks()
    assert URL in first and URL in other
    remote = tmp_path / "team-memory.git"
    run_git(tmp_path, "init", "-q", "--bare", str(remote))  # as the README says
    homes = [tmp_path / "laptop", tmp_path / "ci-runner"]
    for home in homes:
        home.mkdir()
    _run(first, homes[0], remote)
    _run(other, homes[1], remote)
    for home in homes:
        assert (home / "team-memory" / "MEMORY.md").is_file()
    assert run_git(remote, "log", "--format=%s").strip()
