"""The audit trail without git: one JSONL record per automatic write, and recovery."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from memdir import Memory, PathNotAllowed, ScriptedLLM
from memdir.audit import audited, write_text
from memdir.audit.journal import Intent, pending, save
from memdir.audit.trail import read_trail, trail_status
from memdir.lifecycle.archive import archive_session
from memdir.lifecycle.capture import AutoCapture
from memdir.lifecycle.flush import run_memory_flush
from memdir.lifecycle.write import write_memory
from memdir.llm import Message
from memdir.workspace.layout import Workspace

NOW = datetime(2026, 12, 1, 9, 30)
TODAY = "memory/2026-12-01.md"


def records(root: Path) -> list[dict]:
    log = root / ".memdir" / "audit.jsonl"
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def test_write_records_one_line_with_reason(workspace: Path) -> None:
    ws = Workspace(workspace)
    write_memory(ws, "The staging DB listens on port 5433", now=NOW, via="MCP memory_write")
    [record] = records(workspace)
    assert record["message"] == "write: via MCP memory_write"
    assert record["via"] == "MCP memory_write"
    [change] = record["files"]
    assert change["path"] == TODAY
    assert change["added"][-1] == {"line": 3, "text": "- The staging DB listens on port 5433"}
    assert trail_status(ws)["kind"] == "log"


def test_duplicate_write_records_nothing(workspace: Path) -> None:
    ws = Workspace(workspace)
    write_memory(ws, "Redis runs on port 6380", now=NOW)
    result = write_memory(ws, "redis runs on port 6380.", now=NOW)
    assert not result.written
    assert len(records(workspace)) == 1


def test_flush_is_one_record_for_all_its_lines(workspace: Path) -> None:
    llm = ScriptedLLM()
    llm.enqueue("- Redis moved to port 6380\n- The deploy freeze starts Friday\n- Ana owns CI")
    result = run_memory_flush(
        Workspace(workspace),
        [Message("user", "hi")],
        llm,
        now=NOW,
        session="7f3c9a2b-1111-2222-3333-444455556666",
    )
    assert result.appended == 3
    [record] = records(workspace)
    assert record["message"] == "flush: 3 facts from session 7f3c9a2b…"
    assert record["session"] == "7f3c9a2b-1111-2222-3333-444455556666"
    assert len(record["files"][0]["added"]) == 5  # heading, blank line, three facts


def test_capture_and_archive_are_recorded(workspace: Path) -> None:
    ws = Workspace(workspace)
    capture = AutoCapture(ws, session="abcdef12-0000")
    assert capture.consider("Remember that my phone number is +1 555 0100 200", now=NOW)
    archive_session(
        ws,
        [Message("user", "hello"), Message("assistant", "hi there")],
        session_id="abcdef12-0000",
        started_at=NOW,
        now=NOW,
        llm=None,
    )
    messages = [r["message"] for r in records(workspace)]
    assert messages[0] == "capture: 1 entity from session abcdef12…"
    assert messages[1] == "archive: session abcdef12… (2 messages) to memory/2026-12-01-0930.md"


def test_nested_operations_make_one_record(workspace: Path) -> None:
    ws = Workspace(workspace)
    with audited(ws, "hook", via="Claude Code hook Stop") as op:
        write_memory(ws, "first fact about deploys", now=NOW)
        write_memory(ws, "second fact about backups", now=NOW)
        op.describe("2 facts from the transcript")
    [record] = records(workspace)
    assert record["message"] == "hook: 2 facts from the transcript"
    assert record["via"] == "Claude Code hook Stop"


def test_memory_log_newest_first_and_by_path(memory: Memory) -> None:
    memory.write("Alpha runs on port 1000")
    memory.write("Beta is owned by Ana", target="memory", section="facts")
    newest, oldest = memory.log()
    assert newest.paths == ["MEMORY.md"] and oldest.paths[0].startswith("memory/")
    assert [r.paths for r in memory.log("MEMORY.md")] == [["MEMORY.md"]]
    assert memory.log("memory/") == [oldest]
    assert newest.message == "write: via Memory.write"


def test_a_killed_operation_is_recorded_by_the_next_one(workspace: Path) -> None:
    """The journal says a write was coming; the file has it; no record exists: the next
    audited write (or ``memdir log``) records it once."""
    ws = Workspace(workspace)
    path = workspace / TODAY
    path.parent.mkdir(exist_ok=True)
    intent = Intent("deadbeef00000001", "flush", NOW.astimezone(), "1 fact", "s1")
    intent.files[TODAY] = (None, "# 2026-12-01\n\n- survived the kill\n")
    save(ws.state_dir, intent)
    path.write_text("# 2026-12-01\n\n- survived the kill\n", encoding="utf-8")
    # A second intent whose write never happened is dropped without a record.
    never = Intent("deadbeef00000002", "write", NOW.astimezone())
    never.files["MEMORY.md"] = ((workspace / "MEMORY.md").read_text(), "changed")
    save(ws.state_dir, never)
    found = read_trail(ws)
    assert [r.id for r in found] == ["deadbeef00000001"]
    assert found[0].files[0].added[-1] == (3, "- survived the kill")
    assert pending(ws.state_dir) == []
    write_memory(ws, "another fact", now=NOW)
    assert [r["id"] for r in records(workspace)].count("deadbeef00000001") == 1


def test_write_text_outside_an_operation_opens_one(workspace: Path) -> None:
    ws = Workspace(workspace)
    write_text(ws, "memory/topic.md", "# Topic\n")
    [record] = records(workspace)
    assert record["component"] == "write" and record["files"][0]["path"] == "memory/topic.md"


def test_shared_scope_log_hides_private_files(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMDIR_NOW", NOW.isoformat())
    with Memory(workspace) as mem:
        mem.write("Beta is owned by Ana", target="memory", section="facts")
        mem.write("Deploy moved to Friday")
    with Memory(workspace, scope="shared") as shared:
        [record] = shared.log()
        assert record.paths == [TODAY]
        with pytest.raises(PathNotAllowed):
            shared.log("MEMORY.md")
