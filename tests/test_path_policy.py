"""The one path policy (issue 14): configured paths resolved and checked once, no write through
a symlink, special files and bad names skipped with a reason, memdir's state folder link-free."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memdir import Memory
from memdir.errors import PathNotAllowed, WorkspaceError
from memdir.workspace.filewalk import MAX_FOLDER_DEPTH
from memdir.workspace.layout import Workspace
from memdir.workspace.templates import init_workspace
from tests.helpers import write


def skipped_of(ws: Workspace) -> dict[str, str]:
    out: list[tuple[str, str]] = []
    list(ws.iter_files(out))
    return dict(out)


# -- configured extra paths -------------------------------------------------------------------


def test_a_relative_extra_path_that_links_out_is_refused(workspace, tmp_path):
    outside = tmp_path / "outside"
    write(outside, "secret.md", "secret\n")
    (workspace / "notes").symlink_to(outside, target_is_directory=True)
    ws = Workspace(workspace, extra_paths=("notes",))
    assert ws.extra_paths == ()
    assert "leads out of the workspace" in ws.warnings[0]
    with pytest.raises(PathNotAllowed):
        ws.resolve_memory_path(str(outside / "secret.md"))


def test_a_relative_extra_path_that_links_inside_is_kept(workspace):
    write(workspace, "docs/a.md", "doc\n")
    (workspace / "notes").symlink_to(workspace / "docs", target_is_directory=True)
    ws = Workspace(workspace, extra_paths=("notes",))
    assert ws.extra_paths == ((workspace / "docs").resolve(),)
    assert not ws.warnings


def test_explicit_paths_outside_from_the_user_are_kept(workspace, tmp_path):
    write(tmp_path, "elsewhere/CLAUDE.md", "rules\n")
    ws = Workspace(workspace, extra_paths=(str(tmp_path / "elsewhere"), "../elsewhere/CLAUDE.md"))
    assert len(ws.extra_paths) == 2 and not ws.warnings


def test_the_state_folder_is_not_an_extra_path(workspace):
    ws = Workspace(workspace, extra_paths=(".memdir",))
    assert ws.extra_paths == () and "state folder" in ws.warnings[0]


def test_a_link_inside_an_extra_folder_is_not_followed(workspace, tmp_path):
    extra = tmp_path / "automem"
    write(extra, "real.md", "real\n")
    write(tmp_path, "outside/secret.md", "secret\n")
    (extra / "leak.md").symlink_to(tmp_path / "outside" / "secret.md")
    ws = Workspace(workspace, extra_paths=(str(extra),))
    assert [e.path for e in ws.iter_files()] == ["MEMORY.md", str(extra.resolve() / "real.md")]
    assert skipped_of(ws) == {
        str(extra.resolve() / "leak.md"): "a symlink: not followed, not indexed"
    }
    with pytest.raises(PathNotAllowed):
        ws.resolve_memory_path(str(extra / "leak.md"))


# -- the state folder ----------------------------------------------------------------------------


def test_a_symlinked_state_folder_is_refused(tmp_path):
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (root / ".memdir").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(WorkspaceError, match=r"not a folder"):
        Workspace(root)


def test_a_link_inside_the_state_folder_is_refused(workspace, tmp_path):
    (tmp_path / "precious").write_text("precious\n", encoding="utf-8")
    (workspace / ".memdir" / "locks").mkdir()
    (workspace / ".memdir" / "locks" / "memory-write.lock").symlink_to(tmp_path / "precious")
    with pytest.raises(WorkspaceError, match=r"memory-write\.lock is a symlink"):
        Workspace(workspace)
    assert (tmp_path / "precious").read_text(encoding="utf-8") == "precious\n"


@pytest.mark.parametrize(
    "state_file",
    ["audit.jsonl", "claude-code/abc.json", "audit/pending/0001.json", "sessions/s.jsonl"],
)
def test_a_fifo_anywhere_in_the_state_folder_is_refused_before_anything_blocks_on_it(
    workspace, state_file
):
    # memdir reads and appends these files (memdir log, the audit trail, the Claude Code hooks'
    # session state, chat sessions); opening a FIFO would wait forever for a writer.
    fifo = workspace / ".memdir" / state_file
    fifo.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(fifo)
    with pytest.raises(WorkspaceError, match=r"is a FIFO"):
        Workspace(workspace)


def test_a_link_deep_in_the_state_folder_is_refused(workspace, tmp_path):
    (tmp_path / "precious").write_text("precious\n", encoding="utf-8")
    pending = workspace / ".memdir" / "audit" / "pending"
    pending.mkdir(parents=True)
    (pending / "0001.json").symlink_to(tmp_path / "precious")
    with pytest.raises(WorkspaceError, match=r"0001\.json is a symlink"):
        Workspace(workspace)


def test_a_linked_workspace_config_is_allowed(workspace, tmp_path):
    (tmp_path / "dotfiles.toml").write_text("[search]\nmax_results = 3\n", encoding="utf-8")
    (workspace / ".memdir" / "config.toml").symlink_to(tmp_path / "dotfiles.toml")
    with Memory(workspace) as mem:
        assert mem.config.search.max_results == 3


# -- writers ------------------------------------------------------------------------------------


def test_write_path_refuses_a_symlinked_folder(workspace, tmp_path):
    (tmp_path / "outside").mkdir()
    os.rmdir(workspace / "memory")
    (workspace / "memory").symlink_to(tmp_path / "outside", target_is_directory=True)
    ws = Workspace(workspace)
    with pytest.raises(PathNotAllowed, match="memory is a symlink"):
        ws.write_path("memory/2026-11-30.md")


@pytest.mark.parametrize("rel", ["", "/etc/passwd", "../x.md", "memory/../../x.md"])
def test_write_path_refuses_paths_outside(workspace, rel):
    with pytest.raises(PathNotAllowed):
        Workspace(workspace).write_path(rel)


def test_memory_write_refuses_a_symlinked_memory_file(memory, workspace, tmp_path):
    target = tmp_path / "outside.md"
    target.write_text("# outside\n## Project facts\n", encoding="utf-8")
    (workspace / "MEMORY.md").unlink()
    (workspace / "MEMORY.md").symlink_to(target)
    with pytest.raises(PathNotAllowed, match="symlink"):
        memory.write("The staging database listens on port 5433", section="facts", target="memory")
    assert target.read_text(encoding="utf-8") == "# outside\n## Project facts\n"


def test_session_archive_refuses_a_symlinked_memory_folder(workspace, tmp_path):
    from datetime import datetime

    from memdir.lifecycle.archive import archive_session
    from memdir.llm.base import Message

    (tmp_path / "outside").mkdir()
    os.rmdir(workspace / "memory")
    (workspace / "memory").symlink_to(tmp_path / "outside", target_is_directory=True)
    when = datetime(2026, 11, 30, 9, 0)
    with pytest.raises(PathNotAllowed):
        archive_session(
            Workspace(workspace),
            [Message("user", "hello there"), Message("assistant", "hi")],
            session_id="s1",
            started_at=when,
            now=when,
            llm=None,
        )
    assert not list((tmp_path / "outside").iterdir())


def test_workspace_writes_leave_no_temp_file_in_the_notes(memory, workspace):
    memory.write("The staging database listens on port 5433", target="memory", section="facts")
    hidden = [p.name for p in workspace.iterdir() if p.name.endswith(".tmp")]
    assert hidden == []
    assert (workspace / ".memdir" / "tmp").is_dir()


def test_init_over_a_symlinked_memory_folder_does_not_write_there(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "outside").mkdir()
    (root / "memory").symlink_to(tmp_path / "outside", target_is_directory=True)
    with pytest.raises(PathNotAllowed):
        init_workspace(root, sample=True)
    assert not list((tmp_path / "outside").iterdir())


# -- the walk -------------------------------------------------------------------------------------


def test_walk_reports_special_files_links_and_bad_names(workspace, tmp_path):
    write(workspace, "memory/good.md", "good\n")
    os.mkfifo(workspace / "memory" / "pipe.md")
    (workspace / "memory" / "link.md").symlink_to(workspace / "memory" / "good.md")
    with open(os.fsencode(workspace / "memory") + b"/bad-\xff.md", "wb") as fh:
        fh.write(b"x\n")
    (workspace / "memory" / "not-markdown.txt").symlink_to(workspace / "memory" / "good.md")
    ws = Workspace(workspace)
    assert [e.path for e in ws.iter_files()] == ["MEMORY.md", "memory/good.md"]
    skipped = skipped_of(ws)
    assert skipped["memory/pipe.md"].startswith("a FIFO")
    assert skipped["memory/link.md"].startswith("a symlink")
    bad = next(path for path in skipped if "bad-" in path)
    assert bad.endswith("bad-\\xff.md") and "UTF-8" in skipped[bad]
    assert len(skipped) == 3  # a .txt is not a note: nothing to say about it


def test_walk_stops_at_the_depth_bound_and_keeps_going(workspace):
    deep = workspace / "memory" / Path(*(["d"] * (MAX_FOLDER_DEPTH + 5)))
    deep.mkdir(parents=True)
    (deep / "lost.md").write_text("x\n", encoding="utf-8")
    write(workspace, "memory/z-after.md", "after\n")
    write(workspace, "memory/d/shallow.md", "shallow\n")
    ws = Workspace(workspace)
    paths = [e.path for e in ws.iter_files()]
    assert paths == ["MEMORY.md", "memory/z-after.md", "memory/d/shallow.md"]
    (reason,) = skipped_of(ws).values()
    assert f"deeper than {MAX_FOLDER_DEPTH}" in reason


def test_resolve_refuses_a_fifo_and_a_folder(workspace):
    os.mkfifo(workspace / "memory" / "pipe.md")
    (workspace / "memory" / "dir.md").mkdir()
    ws = Workspace(workspace)
    with pytest.raises(PathNotAllowed, match="FIFO"):
        ws.resolve_memory_path("memory/pipe.md")
    with pytest.raises(PathNotAllowed, match="folder"):
        ws.resolve_memory_path("memory/dir.md")


def test_status_lists_skipped_entries_and_refused_paths(workspace, tmp_path):
    os.mkfifo(workspace / "memory" / "pipe.md")
    (tmp_path / "outside").mkdir()
    (workspace / "notes").symlink_to(tmp_path / "outside", target_is_directory=True)
    (workspace / ".memdir" / "config.toml").write_text(
        '[index]\nextra_paths = ["notes"]\n[embedding]\nprovider = "none"\n', encoding="utf-8"
    )
    with Memory(workspace) as mem:
        mem.sync()
        status = mem.status()
    assert "FIFO" in status["file_warnings"]["memory/pipe.md"]
    assert any("leads out of the workspace" in note for note in status["notes"])
