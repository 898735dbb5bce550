"""Reading Claude Code's transcript JSONL: the real format, and the lines that are left out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memdir.errors import MemdirError
from memdir.hooks.transcript import TOOL_RESULT_CHARS, read_transcript
from tests.hooks.conftest import FIXTURES, append_turn


def test_the_real_transcript_reads_as_the_conversation() -> None:
    got = read_transcript(FIXTURES / "transcript.jsonl")
    roles = [m.role for m in got.messages]
    assert roles == ["user", "assistant", "tool", "assistant"] + ["user", "assistant"] * 2
    first, reply, tool, answer = got.messages[:4]
    assert first.content == "Please check the port for staging"
    # Claude Code writes the text and the tool call of one reply as two lines: joined again.
    assert reply.content.startswith("Let me check.\n[tool call Bash: ")
    assert '"command": "echo 5433"' in reply.content
    assert tool.content == "[tool result: 5433]"
    assert "staging uses port 5433" in answer.content
    # The slash command's echo, its caveat (isMeta) and the system line are left out.
    assert not any("/compact" in m.content or "Caveat" in m.content for m in got.messages)
    assert got.lines == 27 and got.skipped == 0
    assert got.started_at is not None and got.started_at.year == 2026
    assert [m.role for m in got.dialogue] == ["user", "assistant", "assistant"] + [
        "user",
        "assistant",
    ] * 2


def test_reading_on_from_a_line(transcript: Path) -> None:
    first = read_transcript(transcript)
    append_turn(transcript, "Also: the cache is Redis on port 6380.", "Noted.")
    later = read_transcript(transcript, start_line=first.lines)
    assert [m.content for m in later.messages] == [
        "Also: the cache is Redis on port 6380.",
        "Noted.",
    ]
    assert later.lines == first.lines + 2
    assert later.started_at == first.started_at  # from the file's first line


def test_sidechains_meta_compact_summaries_reminders_and_thinking_are_left_out(
    tmp_path: Path,
) -> None:
    lines = [
        {"type": "summary", "summary": "Earlier work", "leafUuid": "x"},
        {
            "type": "user",
            "isCompactSummary": True,
            "message": {"role": "user", "content": "This session is being continued…"},
        },
        {"type": "user", "isSidechain": True, "message": {"role": "user", "content": "subagent"}},
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": "<system-reminder>\nToday is Monday.\n</system-reminder>",
                    },
                    {"type": "text", "text": "Deploy on Friday."},
                    {"type": "image", "source": {"type": "base64", "data": "…"}},
                ],
            },
        },
        {
            "type": "assistant",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "private reasoning"},
                    {"type": "text", "text": "OK, Friday."},
                ],
            },
        },
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "is_error": True,
                        "content": [{"type": "text", "text": "x" * 5000}],
                    }
                ],
            },
        },
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json\n", encoding="utf-8")
    got = read_transcript(path)
    assert [(m.role, m.content[:40]) for m in got.messages] == [
        ("user", "Deploy on Friday.\n[image]"),
        ("assistant", "OK, Friday."),
        ("tool", "[tool result (error): " + "x" * 18),
    ]
    assert len(got.messages[2].content) < TOOL_RESULT_CHARS + 40
    assert got.skipped == 1 and got.lines == 7


def test_a_missing_transcript_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(MemdirError, match="cannot read the transcript"):
        read_transcript(tmp_path / "gone.jsonl")


def test_claude_code_s_own_error_replies_are_not_the_model_s_words(tmp_path: Path) -> None:
    # As Claude Code 2.1.197 wrote them for `claude -p` before login (fields trimmed).
    lines = [
        {
            "type": "user",
            "isSidechain": False,
            "message": {"role": "user", "content": "Which port does staging use?"},
        },
        {
            "type": "assistant",
            "isSidechain": False,
            "error": "authentication_failed",
            "isApiErrorMessage": True,
            "message": {
                "id": "8400d368",
                "model": "<synthetic>",
                "role": "assistant",
                "type": "message",
                "content": [{"type": "text", "text": "Not logged in · Please run /login"}],
            },
        },
        {
            "type": "assistant",
            "error": "rate_limit",
            "message": {
                "id": "9",
                "model": "<synthetic>",
                "role": "assistant",
                "content": [{"type": "text", "text": "API Error: 529 overloaded"}],
            },
        },
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    got = read_transcript(path)
    assert [(m.role, m.content) for m in got.dialogue] == [("user", "Which port does staging use?")]
