"""memory_write: daily log appends, MEMORY.md sections, duplicates, validation, privacy."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import pytest

from memdir import MemdirError, Memory, PathNotAllowed, WorkspaceError, init_workspace
from memdir.lifecycle import normalise_memory_text, write_memory
from memdir.lifecycle.write import MAX_TEXT_CHARS, find_duplicate
from memdir.workspace.layout import Workspace
from tests.helpers import write

NOW = datetime(2026, 11, 30, 9, 15)
DAILY = "memory/2026-11-30.md"


@pytest.fixture
def ws(workspace: Path) -> Workspace:
    return Workspace(workspace)


def remember(ws: Workspace, text: str, **kwargs: str) -> tuple[str, int, bool, str]:
    result = write_memory(ws, text, now=NOW, **kwargs)  # type: ignore[arg-type]
    return result.path, result.line, result.written, result.reason


# -- the daily log ---------------------------------------------------------------------------


def test_a_new_daily_log_starts_with_its_date_heading(ws: Workspace) -> None:
    assert remember(ws, "Deployed billing v2.3")[:3] == (DAILY, 3, True)
    assert remember(ws, "Rolled back at 14:10")[:3] == (DAILY, 4, True)
    text = (ws.root / DAILY).read_text(encoding="utf-8")
    assert text == "# 2026-11-30\n\n- Deployed billing v2.3\n- Rolled back at 14:10\n"


def test_appends_to_an_existing_log_keeping_its_bytes(ws: Workspace) -> None:
    original = b"# 2026-11-30\r\n\r\nMorning notes, no final newline"
    (ws.root / DAILY).write_bytes(original)
    path, line, written, _ = remember(ws, "Lunch with Ana")
    data = (ws.root / DAILY).read_bytes()
    assert data == original + b"\n- Lunch with Ana\r\n"  # locked_append adds the missing newline
    assert (path, line, written) == (DAILY, 4, True)


def test_daily_duplicates_are_skipped_exact_and_near(ws: Workspace) -> None:
    fact = "Decided: PostgreSQL 16 with pgbouncer for the billing service database on AWS eu-west-1"
    assert remember(ws, fact)[2] is True
    path, line, written, reason = remember(
        ws,
        "  DECIDED - postgresql 16 with pgbouncer, for the billing service database "
        "on aws eu west 1!",
    )
    assert (path, line, written) == (DAILY, 3, False) and "already says this" in reason
    near = fact + " today"
    path, line, written, reason = remember(ws, near)
    assert (line, written) == (3, False) and "near duplicate" in reason and "0.9" in reason
    assert remember(ws, "We decided to use MySQL 8 for the analytics service")[2] is True
    assert (ws.root / DAILY).read_text(encoding="utf-8").count("PostgreSQL") == 1


def test_find_duplicate_ignores_lines_that_cannot_match() -> None:
    lines = [(0, "completely different words here"), (4, "Call Bob about the invoice")]
    assert find_duplicate("call bob about the invoice.", lines) == (5, 1.0)
    assert find_duplicate("Call Bob about the contract", lines) is None
    assert find_duplicate("!!!", [(0, "---")]) is None


# -- MEMORY.md sections ----------------------------------------------------------------------


def test_adds_to_the_section_and_changes_no_other_byte(ws: Workspace) -> None:
    original = (
        "---\r\ntags: [memory]\r\n---\r\n"
        "# Long-term memory\r\n\r\n"
        "<!-- Edit freely. ## Decisions in a comment is not a heading -->\r\n"
        "## Preferences\r\n- Prefers tea\r\n\r\n"
        "## Shopping (not a memdir section)\r\n- eggs\r\n\r\n"
        "## Decisions\r\n- Use Redis for sessions\r\n  (because of TTLs)\r\n\r\n"
        "Trailing prose, no final newline"
    )
    (ws.root / "MEMORY.md").write_bytes(original.encode())
    path, line, written, reason = remember(
        ws, "Use Postgres for billing", target="memory", section="decisions"
    )
    assert (path, line, written) == ("MEMORY.md", 16, True)
    assert "## Decisions" in reason
    expected = original.replace(
        "  (because of TTLs)\r\n", "  (because of TTLs)\r\n- Use Postgres for billing\r\n"
    )
    assert (ws.root / "MEMORY.md").read_bytes() == expected.encode()


def test_a_comment_in_a_fact_cannot_hide_later_sections(ws: Workspace) -> None:
    remember(ws, "Templates start with <!-- a comment", target="memory", section="preferences")
    remember(ws, "Ship on Tuesdays", target="memory", section="decisions")
    text = (ws.root / "MEMORY.md").read_text(encoding="utf-8")
    assert text.count("## Decisions") == 1 and "## Decisions\n- Ship on Tuesdays\n" in text


def test_section_dedup_is_per_section(ws: Workspace) -> None:
    assert remember(ws, "Dark mode everywhere", target="memory", section="preferences")[2]
    skipped = remember(ws, "dark mode, everywhere", target="memory", section="preferences")
    assert skipped[2] is False and skipped[0] == "MEMORY.md"
    assert remember(ws, "Dark mode everywhere", target="memory", section="todos")[2] is True


def test_chinese_headings_are_found_and_missing_ones_added_in_chinese(tmp_path: Path) -> None:
    root, _ = init_workspace(tmp_path / "zh", "zh")
    zh = Workspace(root)
    before = (root / "MEMORY.md").read_text(encoding="utf-8")
    _, line, written, reason = remember(
        zh, "数据库迁移在周五晚上开始", target="memory", section="decisions"
    )
    assert written and "核心决策" in reason
    lines = (root / "MEMORY.md").read_text(encoding="utf-8").splitlines()
    assert lines[line - 2] == "## 核心决策" and lines[line - 1] == "- 数据库迁移在周五晚上开始"
    assert (
        remember(zh, "数据库迁移在周五晚上开始。", target="memory", section="decisions")[2] is False
    )

    (root / "MEMORY.md").write_text(before.replace("## 待办事项\n", ""), encoding="utf-8")
    _, line, written, _ = remember(zh, "写周报", target="memory", section="todos")
    assert (root / "MEMORY.md").read_text(encoding="utf-8").endswith("\n## 待办事项\n- 写周报\n")


def test_a_missing_memory_md_is_created(ws: Workspace) -> None:
    (ws.root / "MEMORY.md").unlink()
    assert remember(ws, "Port 6380", target="memory", section="facts")[:3] == ("MEMORY.md", 2, True)
    assert (ws.root / "MEMORY.md").read_text(encoding="utf-8") == "## Project facts\n- Port 6380\n"


def test_invalid_utf8_memory_md_is_refused_untouched(ws: Workspace) -> None:
    (ws.root / "MEMORY.md").write_bytes(b"## Todos\n- caf\xe9\n")
    with pytest.raises(WorkspaceError, match="not valid UTF-8"):
        remember(ws, "x", target="memory", section="todos")
    assert (ws.root / "MEMORY.md").read_bytes() == b"## Todos\n- caf\xe9\n"


def test_a_symlinked_memory_md_is_refused(ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.md"
    outside.write_text("## Todos\n", encoding="utf-8")
    (ws.root / "MEMORY.md").unlink()
    os.symlink(outside, ws.root / "MEMORY.md")
    with pytest.raises(PathNotAllowed):
        remember(ws, "x", target="memory", section="todos")
    assert outside.read_text(encoding="utf-8") == "## Todos\n"


# -- validation --------------------------------------------------------------------------------


def test_text_is_normalised_to_one_line() -> None:
    assert normalise_memory_text("  - first line\r\n   second\tline \n") == "first line second line"
    assert normalise_memory_text("a\x00b") == "ab"
    assert normalise_memory_text("use <!-- in templates") == "use &lt;!-- in templates"
    assert len(normalise_memory_text("x" * MAX_TEXT_CHARS)) == MAX_TEXT_CHARS


@pytest.mark.parametrize(
    ("text", "kwargs", "message"),
    [
        ("", {}, "empty"),
        (" \n\t ", {}, "empty"),
        ("- ", {}, "empty"),
        ("x" * (MAX_TEXT_CHARS + 1), {}, "the limit is 2000"),
        ("x", {"target": "notes"}, "unknown target"),
        ("x", {"target": "memory"}, "needs a section"),
        ("x", {"target": "memory", "section": "gossip"}, "unknown section"),
        ("x", {"section": "todos"}, "use target 'memory'"),
    ],
)
def test_bad_input_is_refused_clearly(
    ws: Workspace, text: str, kwargs: dict[str, str], message: str
) -> None:
    with pytest.raises(MemdirError, match=message):
        remember(ws, text, **kwargs)
    assert not (ws.root / DAILY).exists()


# -- through Memory --------------------------------------------------------------------------


def test_memory_write_uses_memdir_now_and_is_found_by_search(
    memory: Memory, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMDIR_NOW", "2026-12-24T18:00")
    result = memory.write("The office party is in the rooftop bar")
    assert result.path == "memory/2026-12-24.md" and result.citation == "memory/2026-12-24.md#L3"
    hit = memory.search("office party rooftop").results[0]
    assert hit.path == "memory/2026-12-24.md"
    result = memory.write("Team prefers async standups", target="memory", section="preferences")
    assert memory.search("async standups").results[0].path == "MEMORY.md"
    assert result.to_dict()["written"] is True


def test_shared_scope_cannot_write_memory_md(workspace: Path, fake_embedder: object) -> None:
    before = (workspace / "MEMORY.md").read_bytes()
    with Memory(workspace, embedder=fake_embedder, scope="shared") as shared:  # type: ignore[arg-type]
        with pytest.raises(PathNotAllowed, match="shared"):
            shared.write("secret", target="memory", section="facts")
        assert shared.write("Group decided on Thursday demos").written
    assert (workspace / "MEMORY.md").read_bytes() == before


def test_an_existing_whitespace_only_log_gets_the_heading(ws: Workspace) -> None:
    write(ws.root, DAILY, "\n")
    assert remember(ws, "x")[1] == 4
    assert (ws.root / DAILY).read_text(encoding="utf-8") == "\n# 2026-11-30\n\n- x\n"
