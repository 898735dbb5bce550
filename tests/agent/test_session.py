"""Chat transcripts: JSON lines under .memdir/sessions, replayed to resume a session."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from memdir import MemdirError
from memdir.agent.session import Session, latest_session_id
from memdir.llm import Message

NOW = datetime(2026, 11, 30, 9, 5, 7)


def test_a_session_is_a_jsonl_transcript_that_replays(tmp_path):
    state = tmp_path / ".memdir"
    session = Session.start(state, now=NOW)
    assert session.id.startswith("20261130-090507-")
    assert session.path == state / "sessions" / f"{session.id}.jsonl"
    for n in range(5):
        session.add(Message("user", f"question {n}"))
        session.add(Message("assistant", f"answer {n}"))
    session.add(Message("tool", "[tool result] memory_search {}"))
    session.mark_flushed(2)
    session.apply_compaction("## Decisions\n- none\n", session.history[-5:])
    session.add(Message("user", "after the compaction"))
    session.mark_extracted()

    records = [json.loads(line) for line in session.path.read_text().splitlines()]
    assert records[0]["type"] == "session" and records[0]["started_at"] == "2026-11-30T09:05:07"
    assert [r["type"] for r in records].count("message") == 12
    assert session.live_bytes > 0

    loaded = Session.load(state, "last")
    assert loaded.id == session.id and loaded.started_at == NOW
    assert loaded.history == session.history
    assert loaded.summary == session.summary and loaded.compactions == 1
    assert loaded.user_turns == 6 and loaded.extracted_turns == 6
    assert not loaded.flushed_this_cycle  # the flush was in the previous cycle
    assert list(loaded.dialogue) == list(session.dialogue)
    assert all(m.role != "tool" for m in loaded.dialogue)


def test_a_session_without_messages_leaves_no_file(tmp_path):
    session = Session.start(tmp_path, now=NOW)
    assert not session.path.exists()
    session.add(Message("user", "hi"))
    first, second = session.path.read_text().splitlines()
    assert json.loads(first)["type"] == "session" and json.loads(second)["content"] == "hi"


def test_a_line_cut_short_at_the_end_is_ignored(tmp_path):
    session = Session.start(tmp_path, now=NOW)
    session.add(Message("user", "kept"))
    with session.path.open("a") as fh:
        fh.write('{"type": "message", "role": "user", "con')
    assert Session.load(tmp_path, session.id).history == [Message("user", "kept")]


def test_latest_and_errors(tmp_path):
    assert latest_session_id(tmp_path) is None
    with pytest.raises(MemdirError, match="run `memdir chat` first"):
        Session.load(tmp_path, "last")
    first = Session.start(tmp_path, now=NOW)
    second = Session.start(tmp_path, now=datetime(2026, 12, 1))
    Session.start(tmp_path, now=datetime(2026, 12, 2))  # never used: no file
    for session in (first, second):
        session.add(Message("user", "hi"))
    assert latest_session_id(tmp_path) == second.id != first.id
    for bad in ("../x", "a/b", "", "x.y"):
        with pytest.raises(MemdirError, match="invalid session id"):
            Session.load(tmp_path, bad)
    with pytest.raises(MemdirError, match="no chat session"):
        Session.load(tmp_path, "20200101-000000-000000")
    (tmp_path / "sessions" / "junk.jsonl").write_text('{"type": "message"}\n')
    with pytest.raises(MemdirError, match="not a memdir chat transcript"):
        Session.load(tmp_path, "junk")
