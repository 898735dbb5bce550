"""memdir.history: automatic writes read back from dream markers, the diary, archive headers
and daily logs."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from memdir.history import archive_event, diary_events, dream_events, read_history
from memdir.markdown.generated import append_entries
from memdir.workspace.layout import Workspace
from tests.dreaming.factories import make_entry
from tests.helpers import write

ENTRY = "- Lock prefix is lock:order: <!-- memdir:promoted memory/2026-11-28.md#L3-L3 key={key} -->"


def test_dream_blocks_become_events_timed_by_the_recall_store() -> None:
    entry = make_entry(start_line=3, end_line=3, promoted_at="2026-11-29T03:00")
    text = append_entries("# Memory\n", "2026-11-29", [ENTRY.format(key=entry.key)])
    text = append_entries(text, "2026-11-20", [ENTRY.format(key="0" * 12)])
    events = dream_events(text, [entry])
    assert [(e.when, e.line, e.summary) for e in events] == [
        ("2026-11-29T03:00", 3, "dream: promoted 1 entry into MEMORY.md"),
        ("2026-11-20", 8, "dream: promoted 1 entry into MEMORY.md"),
    ]
    assert events[0].details == ["Lock prefix is lock:order: (from memory/2026-11-28.md#L3-L3)"]


def test_diary_entries() -> None:
    text = (
        "# Dream diary\n\n## 2026-11-29 03:00\n\nPromoted 2 entries:\n- a (x#L1-L1)\n- b\n\n"
        "## 2026-11-30 03:00\n\nEvicted 1 older promoted line(s).\n"
    )
    events = diary_events(text)
    assert [(e.when, e.line) for e in events] == [("2026-11-29T03:00", 3), ("2026-11-30T03:00", 9)]
    assert events[0].summary == "dream diary: Promoted 2 entries:"
    assert events[0].details == ["a (x#L1-L1)", "b"]


def test_archive_header_or_nothing() -> None:
    head = (
        "# Session 2026-11-28 21:40\n\n- date: 2026-11-28 21:40\n- session: s1\n"
        "- source: memdir chat\n- archived: 2026-11-28 22:05\n- messages: the last 3\n\n"
        "## Conversation\n"
    )
    event = archive_event("memory/2026-11-28-x.md", head)
    assert event is not None and event.when == "2026-11-28T22:05"
    assert event.details == ["session s1", "started 2026-11-28 21:40", "the last 3"]
    assert archive_event("memory/2026-11-28-notes.md", "# My own notes\n- x\n") is None


def test_read_history_newest_first_skipping_symlinks(workspace: Path, tmp_path: Path) -> None:
    write(workspace, "memory/2026-11-27.md", "# 2026-11-27\n\n- one\n- two\n")
    write(workspace, "memory/2026-11-28.md", "# 2026-11-28\n\n- three\n")
    (tmp_path / "diary.md").write_text("## 2026-12-01 03:00\n\nPromoted 1 entry:\n", "utf-8")
    (workspace / "DREAMS.md").symlink_to(tmp_path / "diary.md")
    events = read_history(Workspace(workspace))
    assert [(e.kind, e.when) for e in events] == [("daily", "2026-11-28"), ("daily", "2026-11-27")]
    assert events[1].details == ["one", "two"]
    stamp = datetime.fromtimestamp((workspace / "memory/2026-11-27.md").stat().st_mtime)
    assert f"last change {stamp:%Y-%m-%d %H:%M}" in events[1].summary


def test_audit_records_become_events_and_replace_file_records() -> None:
    from memdir.audit.records import AuditRecord, FileChange
    from memdir.history import HistoryEvent, _told_by_audit, audit_event

    entry = "- fact <!-- memdir:promoted memory/2026-11-28.md#L3-L3 key=0123456789ab -->"
    record = AuditRecord(
        id="r1",
        time=datetime.fromisoformat("2026-11-29T10:00:00").astimezone(),
        component="dream",
        summary="promoted 1 entry (1 line), diary",
        files=(
            FileChange("DREAMS.md", added=((1, "# Dream diary"),)),
            FileChange(
                "MEMORY.md",
                added=(
                    (20, "## Promoted 2026-11-29"),
                    (21, "<!-- memdir:dream:begin 2026-11-29 -->"),
                    (22, entry),
                    (23, "<!-- memdir:dream:end -->"),
                ),
            ),
        ),
        commit="0123456789abcdef",
    )
    event = audit_event(record)
    assert (event.when, event.kind, event.path, event.line) == (
        "2026-11-29T10:00",
        "dream",
        "MEMORY.md",
        20,
    )
    assert event.summary == "dream: promoted 1 entry (1 line), diary"
    assert event.record == "git commit 0123456789"
    assert "+ MEMORY.md#L22: fact (from memory/2026-11-28.md#L3-L3)" in event.details
    assert not any("memdir:dream:" in d or "## Promoted" in d for d in event.details)
    block = HistoryEvent("2026-11-29T03:00", "dream", "MEMORY.md", 20, "dream: promoted 1 entry")
    older = HistoryEvent("2026-11-20", "dream", "MEMORY.md", 8, "dream: promoted 1 entry")
    assert _told_by_audit(block, [event]) and not _told_by_audit(older, [event])


def test_memory_history_shows_the_audit_trail(workspace: Path, monkeypatch) -> None:
    from memdir import FakeEmbedder, Memory

    monkeypatch.setenv("MEMDIR_NOW", "2026-11-29T10:00")
    with Memory(workspace, embedder=FakeEmbedder()) as memory:
        memory.write("The staging Redis port is 6380.", via="MCP memory_write")
        events = memory.history()
    write_event = next(e for e in events if e.kind == "write")
    assert write_event.summary == "write: via MCP memory_write"
    assert write_event.path == "memory/2026-11-29.md"
    assert "+ memory/2026-11-29.md#L3: - The staging Redis port is 6380." in write_event.details
    assert write_event.record == "audit log .memdir/audit.jsonl"
    assert [e.kind for e in events] == ["write", "daily"]  # the day's log is still listed
