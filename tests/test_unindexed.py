"""Markdown files the workspace holds but memdir does not index (memdir.index.unindexed)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from memdir import FakeEmbedder, Memory
from memdir.cli import cli
from memdir.index.unindexed import find_unindexed
from memdir.workspace.layout import Workspace
from tests.helpers import write


def test_notes_outside_the_indexed_folders_are_found_with_a_hint(workspace: Path) -> None:
    write(workspace, "notes/todo.md", "- buy milk\n")
    write(workspace, "notes/deep/idea.md", "- an idea\n")
    write(workspace, "README.md", "# readme\n")
    write(workspace, "memory/2026-11-28.md", "- indexed\n")
    write(workspace, "node_modules/pkg/README.md", "# dependency\n")
    write(workspace, ".obsidian/notes.md", "# hidden\n")

    found = find_unindexed(Workspace(workspace))

    assert found.count == 3 and not found.truncated
    assert set(found.examples) == {"README.md", "notes/todo.md", "notes/deep/idea.md"}
    assert found.folders == {".": 1, "notes": 2}
    hint = found.hint(workspace / ".memdir" / "config.toml")
    assert 'extra_paths = ["notes", "README.md"]' in hint and "[index]" in hint


def test_the_workspace_files_and_extra_paths_are_not_reported(workspace: Path) -> None:
    write(workspace, "notes/todo.md", "- buy milk\n")
    assert (workspace / "USER.md").exists() and (workspace / "AGENTS.md").exists()
    assert find_unindexed(Workspace(workspace, ("notes",))).count == 0


def test_status_and_index_say_what_is_not_indexed(workspace: Path) -> None:
    write(workspace, "notes/todo.md", "- buy milk\n")
    runner = CliRunner()
    (Path(workspace) / ".memdir" / "config.toml").write_text(
        '[embedding]\nprovider = "fake"\n', encoding="utf-8"
    )
    status = runner.invoke(cli, ["-w", str(workspace), "status"], catch_exceptions=False)
    assert "not indexed" in status.output and 'extra_paths = ["notes"]' in status.output
    index = runner.invoke(cli, ["-w", str(workspace), "index", "--json"], catch_exceptions=False)
    data = json.loads(index.output)
    assert data["unindexed"]["count"] == 1 and data["unindexed"]["examples"] == ["notes/todo.md"]
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        assert mem.status()["unindexed"]["folders"] == {"notes": 1}
