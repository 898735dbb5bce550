"""A plain `memdir search` or `memdir status` in a fresh process loads none of the heavy parts
the other features bring: the audit trail's git library, the web inspector, the chat terminal,
the MCP SDK, the HTTP client of the remote providers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memdir import init_workspace

#: Top-level modules a search or status must not import.
HEAVY = (
    "dulwich",
    "starlette",
    "uvicorn",
    "jinja2",
    "prompt_toolkit",
    "mcp",
    "anyio",
    "httpx",
    "httpx_sse",
)

_RUN = """
import json, sys
from memdir.cli.main import main
try:
    main()
except SystemExit:
    pass
heavy = [name for name in {heavy!r} if name in sys.modules]
print(json.dumps(heavy), file=sys.stderr)
"""


def _loaded(command: list[str], workspace: Path, home: Path) -> list[str]:
    env = {**os.environ, "MEMDIR_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-c", _RUN.format(heavy=HEAVY), "-w", str(workspace), *command],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    loaded: list[str] = json.loads(done.stderr.strip().splitlines()[-1])
    return loaded


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('[embedding]\nprovider = "fake"\n')
    return home


@pytest.mark.parametrize("git", [False, True], ids=["log-trail", "git-workspace"])
@pytest.mark.parametrize("command", [["search", "redis port"], ["status"]])
def test_search_and_status_load_no_heavy_module(
    tmp_path: Path, home: Path, git: bool, command: list[str]
) -> None:
    root, _ = init_workspace(tmp_path / "ws")
    (root / "memory" / "2026-11-28.md").write_text("- Redis listens on port 6380.\n")
    if git:  # automatic writes would be commits: the trail's library must still stay unloaded
        subprocess.run(["git", "init", "-q", str(root)], check=True)

    assert _loaded(command, root, home) == []


def test_an_english_search_over_chinese_notes_leaves_jieba_unloaded(
    tmp_path: Path, home: Path
) -> None:
    # jieba's dictionary takes about a second to load: once the notes are indexed, only a query
    # with CJK terms needs it, through every stage (keyword leg, snippets, the rerank stage's
    # line features).
    root, _ = init_workspace(tmp_path / "ws")
    (root / "memory" / "2026-11-28.md").write_text(
        "- Redis listens on port 6380.\n- 和王磊一起排查 staging 的 Helm 配置。\n"
    )
    run = _RUN.replace("{heavy!r}", "('jieba',)")
    env = {**os.environ, "MEMDIR_HOME": str(home)}
    index = [sys.executable, "-m", "memdir", "-w", str(root), "index"]
    subprocess.run(index, env=env, check=True, capture_output=True, timeout=120)  # needs jieba
    args = [sys.executable, "-c", run, "-w", str(root), "search", "staging helm redis port"]
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert "2026-11-28.md" in done.stdout
    assert json.loads(done.stderr.strip().splitlines()[-1]) == []
