"""What a person browses through Memory (``memdir ui``): read, files, memory_budget, history,
and searches that record no recall."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdir import FakeEmbedder, Memory, PathNotAllowed, QueryError
from tests.helpers import write


def test_read_allows_memory_files_and_owner_files(memory: Memory, workspace: Path) -> None:
    assert memory.read("MEMORY.md").to_dict() == memory.get("MEMORY.md").to_dict()
    user = memory.read("USER.md")
    assert user.exists and user.text == (workspace / "USER.md").read_text("utf-8")
    assert memory.read("AGENTS.md", from_line=1, lines=1).text == "# Agent"
    assert not memory.read("DREAMS.md").exists
    with pytest.raises(PathNotAllowed):
        memory.get("USER.md")  # memory_get itself is unchanged
    with pytest.raises(PathNotAllowed):
        memory.read("../USER.md")
    with pytest.raises(QueryError):
        memory.read("USER.md", from_line=0)


def test_shared_scope_reads_no_private_or_owner_file(workspace: Path) -> None:
    with Memory(workspace, embedder=FakeEmbedder(), scope="shared") as shared:
        for path in ("USER.md", "AGENTS.md", "MEMORY.md"):
            with pytest.raises(PathNotAllowed):
                shared.read(path)
        assert {f.path for f in shared.files()}.isdisjoint({"MEMORY.md", "USER.md"})
        with pytest.raises(PathNotAllowed):
            shared.memory_budget()
        with pytest.raises(PathNotAllowed):
            shared.history()


def test_files_lists_kinds_and_index_state(memory: Memory, workspace: Path) -> None:
    write(workspace, "memory/2026-11-28.md", "# 2026-11-28\n- a\n")
    memory.sync()
    write(workspace, "memory/2026-11-29-chat.md", "# Session\n")
    files = {f.path: f for f in memory.files()}
    assert files["memory/2026-11-28.md"].kind == "daily" and files["memory/2026-11-28.md"].indexed
    assert files["memory/2026-11-29-chat.md"].kind == "archive"
    assert files["memory/2026-11-29-chat.md"].day == "2026-11-29"
    assert not files["memory/2026-11-29-chat.md"].indexed  # not synced yet
    assert files["USER.md"].kind == "user" and not files["USER.md"].indexed


def test_search_records_recalls_unless_told_not_to(memory: Memory, workspace: Path) -> None:
    write(workspace, "memory/2026-11-28.md", "# 2026-11-28\n- the staging redis port is 6380\n")
    memory.search("staging redis port", record=False)
    assert memory.recalls.entries() == []
    memory.search("staging redis port")
    assert [e.path for e in memory.recalls.entries()] == ["memory/2026-11-28.md"]


def test_memory_budget_measures_memory_md(memory: Memory, workspace: Path) -> None:
    usage = memory.memory_budget()
    assert usage.chars == len((workspace / "MEMORY.md").read_text("utf-8"))
    assert usage.generated_chars == 0 and usage.budget == 10_000
