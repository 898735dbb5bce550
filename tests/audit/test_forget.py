"""memdir forget: preview, generated vs person lines, the record, the index, dreaming."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memdir import FakeEmbedder, MemdirError, Memory, PathNotAllowed
from memdir.lifecycle.forget import parse_place
from tests.audit.conftest import GitRunner
from tests.dreaming.test_end_to_end import NOTES, run_script
from tests.helpers import write

NOW = "2026-12-01T09:30"
DAILY = "memory/2026-12-01.md"


@pytest.fixture
def mem(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Memory:
    monkeypatch.setenv("MEMDIR_NOW", NOW)
    memory = Memory(workspace, embedder=FakeEmbedder())
    memory.write("The staging Redis listens on port 6380")
    with (workspace / DAILY).open("a", encoding="utf-8") as fh:
        fh.write("- I think the redis port is 6379 in production\n")
    return memory


def test_parse_place() -> None:
    assert parse_place("memory/2026-12-01.md#L3") == ("memory/2026-12-01.md", 3, 3)
    assert parse_place("MEMORY.md#L2-L5") == ("MEMORY.md", 2, 5)
    assert parse_place("MEMORY.md#L2-5") == ("MEMORY.md", 2, 5)
    assert parse_place("redis port") is None
    with pytest.raises(MemdirError):
        parse_place("MEMORY.md#L5-L2")


def test_preview_marks_whose_lines_and_writes_nothing(mem: Memory, workspace: Path) -> None:
    before = (workspace / DAILY).read_text(encoding="utf-8")
    result = mem.forget("redis port")
    assert not result.applied
    assert [(x.line, x.generated) for x in result.lines] == [(3, True), (4, False)]
    assert (workspace / DAILY).read_text(encoding="utf-8") == before
    assert [r.component for r in mem.log()] == ["write"]


def test_apply_removes_generated_lines_and_keeps_the_persons(mem: Memory, workspace: Path) -> None:
    assert mem.search("staging redis 6380").results  # indexed before
    result = mem.forget("redis port", apply=True)
    assert [x.text for x in result.removed] == ["- The staging Redis listens on port 6380"]
    assert [x.text for x in result.refused] == ["- I think the redis port is 6379 in production"]
    text = (workspace / DAILY).read_text(encoding="utf-8")
    assert "6380" not in text and "6379" in text
    # The index knows at once.
    hits = mem.search("staging redis 6380", min_score=0.0).results
    assert all("6380" not in h.snippet for h in hits)
    # The record keeps the removed text (the way back without git).
    log = (workspace / ".memdir" / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    record = json.loads(log[-1])
    assert record["message"] == "forget: removed 1 line (redis port)"
    assert record["files"][0]["removed"] == [
        {"line": 3, "text": "- The staging Redis listens on port 6380"}
    ]
    forced = mem.forget("redis port", apply=True, force=True)
    assert [x.line for x in forced.removed] == [3]
    assert "6379" not in (workspace / DAILY).read_text(encoding="utf-8")


def test_place_target_and_refusals(mem: Memory, workspace: Path) -> None:
    result = mem.forget(f"{DAILY}#L3-L4")
    assert [x.generated for x in result.lines] == [True, False]
    with pytest.raises(MemdirError, match="past its end"):
        mem.forget(f"{DAILY}#L40")
    with pytest.raises(PathNotAllowed):
        mem.forget("../outside.md#L1")
    with (
        Memory(workspace, embedder=FakeEmbedder(), scope="shared") as shared,
        pytest.raises(PathNotAllowed),
    ):
        shared.forget(f"{DAILY}#L3")


def test_a_line_edited_by_a_person_is_theirs(mem: Memory, workspace: Path) -> None:
    path = workspace / DAILY
    path.write_text(
        path.read_text(encoding="utf-8").replace("port 6380", "port 6381"), encoding="utf-8"
    )
    [line] = mem.forget(f"{DAILY}#L3").lines
    assert not line.generated


def test_forget_in_git_and_revert(tmp_path: Path, git: GitRunner, monkeypatch) -> None:
    from memdir import init_workspace
    from memdir.audit.trail import init_git
    from memdir.workspace.layout import Workspace

    monkeypatch.setenv("MEMDIR_NOW", NOW)
    root, created = init_workspace(tmp_path / "g")
    init_git(Workspace(root), created)
    with Memory(root, embedder=FakeEmbedder()) as memory:
        memory.write("Ana owns the billing service", target="memory", section="facts")
        result = memory.forget("Ana owns billing", apply=True)
        assert result.commit == git(root, "rev-parse", "HEAD").strip()
    assert (
        git(root, "log", "-1", "--format=%an|%s")
        == "memdir|forget: removed 1 line (Ana owns billing)\n"
    )
    git(root, "revert", "--no-edit", "HEAD")
    assert "- Ana owns the billing service" in (root / "MEMORY.md").read_text(encoding="utf-8")


def test_dreaming_never_brings_a_forgotten_line_back(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for rel, text in NOTES.items():
        write(workspace, rel, text)
    run_script(workspace, monkeypatch)
    memory_md = workspace / "MEMORY.md"
    with Memory(workspace, embedder=FakeEmbedder()) as m:
        assert any(
            "6380, not 6379" in line for o in m.dream(apply=True).promoted for line in o.lines
        )
        promoted = [
            n for n, line in enumerate(memory_md.read_text().splitlines(), 1) if "6380, not" in line
        ]
        result = m.forget(f"MEMORY.md#L{promoted[0]}", apply=True)
        assert [x.generated for x in result.removed] == [True]  # a promotion marker line
        assert result.recalls_dropped >= 1
    assert "6380, not 6379" not in memory_md.read_text()
    run_script(workspace, monkeypatch)  # the same searches again: new recall entries
    with Memory(workspace, embedder=FakeEmbedder()) as m:
        again = m.dream(apply=True)
    assert all("6380, not 6379" not in line for o in again.promoted for line in o.lines)
    assert "6380, not 6379" not in memory_md.read_text()
