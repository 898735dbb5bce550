"""A person's edit wins its bytes (issue 35, defect 3): memdir's rewrites of MEMORY.md — a
section fact, ``forget``, a dream promotion — keep what a person appended or saved while they
ran, and count none of it as memdir's in the audit trail.

The person is a real descriptor opened before memdir's write and written in a thread 0.3 s
later, as a slow ``echo >>`` or an editor's save would; on 9657cf2 memdir's rename had thrown
that file away by then. The long measurement (a shell appending every 10 ms through the CLI,
the service and HTTP MCP) is ``tests/torture/test_person_appends_round3.py``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import pytest

from memdir import FakeEmbedder, Memory
from memdir.audit.trail import read_trail
from memdir.lifecycle import write_memory
from memdir.workspace.layout import Workspace
from tests.audit.conftest import GitRunner
from tests.dreaming.factories import seed_recalls

NOW = datetime(2026, 11, 30, 9, 15)
LATE = "- the person's line, appended while memdir wrote"


@contextmanager
def person(path: Path, act: Callable[[int], None], flags: int) -> Iterator[None]:
    """A person's writer: ``path`` opened now, ``act(fd)`` 0.3 s later in a thread."""
    fd = os.open(path, flags)

    def run() -> None:
        time.sleep(0.3)
        act(fd)
        os.close(fd)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        yield
    finally:
        thread.join()


def appends(path: Path) -> Iterator[None]:
    return person(path, lambda fd: os.write(fd, f"{LATE}\n".encode()), os.O_WRONLY | os.O_APPEND)


def test_a_line_appended_during_a_section_write_is_kept(workspace: Path) -> None:
    memory_md = workspace / "MEMORY.md"
    with appends(memory_md):
        result = write_memory(
            Workspace(workspace), "We chose Postgres 16", target="memory", section="decisions",
            now=NOW,
        )  # fmt: skip
    lines = memory_md.read_text(encoding="utf-8").splitlines()
    assert LATE in lines and "- We chose Postgres 16" in lines
    assert lines[result.line - 1] == "- We chose Postgres 16"
    [record] = read_trail(Workspace(workspace))
    assert [text for _, text in record.files[0].added] == ["- We chose Postgres 16"]
    assert record.files[0].removed == ()


def test_an_edit_saved_in_place_during_a_section_write_is_kept(workspace: Path) -> None:
    memory_md = workspace / "MEMORY.md"
    memory_md.write_text("# Memory\n\n## Decisions\n- Use Redis 6\n", encoding="utf-8")
    edited = "# Memory\n\n## Decisions\n- Use Redis 7 (edited by hand)\n- Keep the cache warm\n"

    def save(fd: int) -> None:
        os.ftruncate(fd, 0)
        os.pwrite(fd, edited.encode(), 0)

    with person(memory_md, save, os.O_RDWR):
        write_memory(
            Workspace(workspace),
            "We chose Postgres 16",
            target="memory",
            section="decisions",
            now=NOW,
        )
    text = memory_md.read_text(encoding="utf-8")
    assert "- Use Redis 7 (edited by hand)\n" in text and "- Keep the cache warm\n" in text
    assert "- We chose Postgres 16\n" in text and "Redis 6" not in text
    [record] = read_trail(Workspace(workspace))
    assert [text for _, text in record.files[0].added] == ["- We chose Postgres 16"]


def test_a_line_appended_during_forget_is_kept(workspace: Path) -> None:
    memory_md = workspace / "MEMORY.md"
    memory_md.write_text("# Memory\n\n## Facts\n- stale fact\n- good fact\n", encoding="utf-8")
    with Memory(workspace) as memory, appends(memory_md):
        removed = memory.forget("MEMORY.md#L4", apply=True, force=True)
    assert [x.text for x in removed.removed] == ["- stale fact"]
    assert memory_md.read_text(encoding="utf-8") == (f"# Memory\n\n## Facts\n- good fact\n{LATE}\n")


def test_a_commit_holds_memdirs_line_and_not_the_persons(repo: Path, git: GitRunner) -> None:
    memory_md = repo / "ws" / "MEMORY.md"
    with appends(memory_md):
        write_memory(
            Workspace(repo / "ws"),
            "We chose Postgres 16",
            target="memory",
            section="decisions",
            now=NOW,
        )
    committed = git(repo, "show", "HEAD:ws/MEMORY.md")
    assert "- We chose Postgres 16" in committed and LATE not in committed
    diff = git(repo, "diff").splitlines()
    assert [x[1:] for x in diff if x.startswith("+") and not x.startswith("+++")] == [LATE]


def test_a_line_appended_during_a_dream_promotion_is_kept(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMDIR_NOW", NOW.isoformat())
    note = "memory/2026-11-28.md"
    (workspace / note).write_text("# 2026-11-28\n\n- Redis listens on 6380 in staging\n")
    memory_md = workspace / "MEMORY.md"
    with Memory(workspace, embedder=FakeEmbedder()) as memory:
        seed_recalls(memory.recalls, note, 3, 3, "- Redis listens on 6380 in staging", until=NOW)
        with appends(memory_md):
            report = memory.dream(apply=True)
    assert [o.status for o in report.promotion.outcomes] == ["promoted"]
    text = memory_md.read_text(encoding="utf-8")
    assert f"\n{LATE}\n" in text and "- Redis listens on 6380 in staging <!--" in text
