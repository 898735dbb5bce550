"""memdir.history: automatic writes read back from dream markers, the diary, archive headers
and daily logs."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from memdir.dreaming.budget import append_entries
from memdir.history import archive_event, diary_events, dream_events, read_history
from memdir.workspace import Workspace
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
