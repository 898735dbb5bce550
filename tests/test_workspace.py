"""The workspace on disk: layout, file listing, path safety, atomic write and locked append."""

from __future__ import annotations

import multiprocessing
import os
import re
import stat
from pathlib import Path

import pytest
from filelock import FileLock
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdir.errors import PathNotAllowed, WorkspaceError
from memdir.workspace.layout import (
    Workspace,
    atomic_write,
    is_daily_log,
    is_workspace,
    locked_append,
)
from memdir.workspace.templates import init_workspace
from tests.helpers import write

EN_HEADINGS = ["Preferences", "Decisions", "Lessons", "Project facts", "Todos"]
ZH_HEADINGS = ["用户偏好", "核心决策", "经验教训", "项目事实", "待办事项"]


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` with its bytes (None for folders)."""
    return {
        p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None)
        for p in sorted(root.rglob("*"))
    }


def headings(text: str) -> list[str]:
    return [line[3:] for line in text.splitlines() if line.startswith("## ")]


# --- init_workspace ------------------------------------------------------------------------


def test_init_creates_the_tree(tmp_path):
    root, created = init_workspace(tmp_path / "ws")

    assert root == (tmp_path / "ws").resolve()
    assert sorted(created) == [".gitignore", "AGENTS.md", "MEMORY.md", "USER.md"]
    assert headings((root / "MEMORY.md").read_text(encoding="utf-8")) == EN_HEADINGS
    assert (root / "USER.md").read_text(encoding="utf-8").strip()
    assert (root / "AGENTS.md").read_text(encoding="utf-8").strip()
    for folder in ("memory", "skills", ".memdir"):
        assert (root / folder).is_dir()
    assert ".memdir/" in (root / ".gitignore").read_text(encoding="utf-8").splitlines()


def test_init_chinese_headings(tmp_path):
    root, _ = init_workspace(tmp_path / "ws", lang="zh")

    assert headings((root / "MEMORY.md").read_text(encoding="utf-8")) == ZH_HEADINGS


def test_init_twice_changes_nothing(tmp_path):
    root, _ = init_workspace(tmp_path / "ws")
    before = snapshot(root)

    _, created = init_workspace(root)

    assert created == []
    assert snapshot(root) == before


def test_init_never_overwrites_an_edited_memory_file(tmp_path):
    root, _ = init_workspace(tmp_path / "ws")
    edited = "# Mine\n\n## Preferences\n- tabs, not spaces\n"
    write(root, "MEMORY.md", edited)

    _, created = init_workspace(root, lang="zh")

    assert "MEMORY.md" not in created
    assert (root / "MEMORY.md").read_text(encoding="utf-8") == edited


def test_init_keeps_an_existing_gitignore(tmp_path):
    write(tmp_path / "ws", ".gitignore", "node_modules/\n*.pyc\n")

    root, created = init_workspace(tmp_path / "ws")

    lines = (root / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert lines == ["node_modules/", "*.pyc", ".memdir/"]
    assert ".gitignore" in created


def test_init_does_not_repeat_gitignore_entry(tmp_path):
    write(tmp_path / "ws", ".gitignore", "build/\n.memdir/\n")

    root, created = init_workspace(tmp_path / "ws")

    assert ".gitignore" not in created
    assert (root / ".gitignore").read_text(encoding="utf-8") == "build/\n.memdir/\n"


def test_init_unknown_language(tmp_path):
    with pytest.raises(WorkspaceError, match="unknown language 'fr'"):
        init_workspace(tmp_path / "ws", lang="fr")
    assert not (tmp_path / "ws").exists()


def test_init_over_a_file_is_a_workspace_error(tmp_path):
    write(tmp_path, "taken", "not a folder")

    with pytest.raises(WorkspaceError, match="cannot create workspace"):
        init_workspace(tmp_path / "taken")


# --- Workspace -----------------------------------------------------------------------------


def test_missing_workspace_says_to_run_init(tmp_path):
    with pytest.raises(WorkspaceError, match="memdir init"):
        Workspace(tmp_path / "nowhere")


def test_a_folder_without_memory_files_is_not_a_workspace(tmp_path):
    (tmp_path / "plain").mkdir()

    with pytest.raises(WorkspaceError, match=r"not a memdir workspace.*memdir init"):
        Workspace(tmp_path / "plain")
    assert list((tmp_path / "plain").iterdir()) == []


@pytest.mark.parametrize("marker", ["MEMORY.md", "memory/", ".memdir/"])
def test_any_memory_file_or_the_state_folder_makes_a_workspace(tmp_path, marker):
    root = tmp_path / "ws"
    root.mkdir()
    if marker.endswith("/"):
        (root / marker).mkdir()
    else:
        (root / marker).write_text("# notes\n", encoding="utf-8")

    assert is_workspace(root)
    assert Workspace(root).root == root.resolve()


def test_workspace_on_a_file_is_refused(tmp_path):
    write(tmp_path, "file.md", "x")

    with pytest.raises(WorkspaceError, match="not a folder"):
        Workspace(tmp_path / "file.md")


def test_workspace_paths(workspace):
    ws = Workspace(workspace)

    assert ws.root == workspace
    assert ws.memory_file == workspace / "MEMORY.md"
    assert ws.state_dir == workspace / ".memdir"
    assert ws.daily_log("2026-03-01") == workspace / "memory" / "2026-03-01.md"


# --- iter_files ----------------------------------------------------------------------------


def listed(ws: Workspace) -> list[tuple[str, str]]:
    return [(entry.path, entry.source) for entry in ws.iter_files()]


def test_iter_files_lists_memory_files_only(workspace, tmp_path):
    write(workspace, "memory/2026-01-05.md", "daily\n")
    write(workspace, "memory/topics/redis.md", "topic\n")
    write(workspace, "memory/notes.txt", "not markdown\n")
    write(workspace, "memory/.hidden/secret.md", "hidden folder\n")
    write(workspace, "skills/deploy/SKILL.md", "skill\n")
    write(workspace, "README.md", "not a memory file\n")
    write(workspace, ".memdir/state.md", "machine state\n")

    assert listed(Workspace(workspace)) == [
        ("MEMORY.md", "memory"),
        ("memory/2026-01-05.md", "memory"),
        ("memory/topics/redis.md", "memory"),
        ("skills/deploy/SKILL.md", "memory"),
    ]


def test_iter_files_entries_point_at_the_files(workspace):
    write(workspace, "memory/a.md", "a\n")

    entries = list(Workspace(workspace).iter_files())

    assert all(e.abspath == workspace / e.path for e in entries)
    assert all(e.abspath.is_file() for e in entries)


def test_iter_files_does_not_follow_symlinks(workspace, tmp_path):
    outside = tmp_path / "outside"
    write(outside, "secret.md", "secret\n")
    write(outside, "dir/inner.md", "inner\n")
    os.symlink(outside / "secret.md", workspace / "memory" / "link.md")
    os.symlink(outside / "dir", workspace / "memory" / "linkdir")
    os.symlink(outside / "dir", workspace / "skills" / "linked-skill")
    write(workspace, "memory/real.md", "real\n")

    assert listed(Workspace(workspace)) == [("MEMORY.md", "memory"), ("memory/real.md", "memory")]


def test_iter_files_skips_a_symlinked_memory_file(workspace, tmp_path):
    write(tmp_path, "elsewhere/MEMORY.md", "elsewhere\n")
    (workspace / "MEMORY.md").unlink()
    os.symlink(tmp_path / "elsewhere" / "MEMORY.md", workspace / "MEMORY.md")

    assert listed(Workspace(workspace)) == []


def test_iter_files_includes_extra_paths(workspace, tmp_path):
    write(workspace, "CLAUDE.md", "project rules\n")
    write(workspace, "docs/a.md", "doc a\n")
    write(workspace, "docs/b.txt", "not markdown\n")
    automem = tmp_path / "automem"
    write(automem, "m.md", "auto memory\n")
    write(automem, "sub/n.md", "nested\n")
    other = tmp_path / "other"
    write(other, "o.md", "other\n")

    ws = Workspace(workspace, extra_paths=("CLAUDE.md", "docs", str(automem), "../other/o.md"))

    assert listed(ws) == [
        ("MEMORY.md", "memory"),
        ("CLAUDE.md", "extra"),
        ("docs/a.md", "extra"),
        (str(automem.resolve() / "m.md"), "extra"),
        (str(automem.resolve() / "sub" / "n.md"), "extra"),
        (str(other.resolve() / "o.md"), "extra"),
    ]


def test_iter_files_extra_paths_do_not_duplicate_or_fail(workspace, tmp_path):
    write(workspace, "memory/a.md", "a\n")

    ws = Workspace(workspace, extra_paths=("memory", "MEMORY.md", str(tmp_path / "missing")))

    assert listed(ws) == [("MEMORY.md", "memory"), ("memory/a.md", "memory")]


# --- resolve_memory_path -------------------------------------------------------------------


@pytest.mark.parametrize(
    "rel",
    ["MEMORY.md", "memory/x.md", "memory/2026-01-05.md", "memory/a/b/c.md", "skills/a/SKILL.md"],
)
def test_resolve_allows_memory_files(workspace, rel):
    assert Workspace(workspace).resolve_memory_path(rel) == workspace / rel


def test_resolve_allows_a_missing_file(workspace):
    # memory_get answers empty text for a missing file, so resolving must not require it.
    assert Workspace(workspace).resolve_memory_path("memory/new.md") == workspace / "memory/new.md"


def test_resolve_allows_an_absolute_path_inside(workspace):
    target = write(workspace, "memory/x.md", "x\n")

    assert Workspace(workspace).resolve_memory_path(str(target)) == target


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../x.md", "'..'"),
        ("memory/../../etc/passwd.md", "'..'"),
        ("memory/../MEMORY.md", "'..'"),
        ("/etc/passwd", ".md"),
        ("/etc/passwd.md", "outside the workspace"),
        ("USER.md", "only MEMORY.md"),
        ("AGENTS.md", "only MEMORY.md"),
        (".memdir/notes.md", "only MEMORY.md"),
        ("x.md", "only MEMORY.md"),
        ("notes.txt", ".md"),
        ("memory/x.txt", ".md"),
        ("memory/", ".md"),
        ("", "empty"),
        ("memory/x.md\x00", "invalid"),
    ],
)
def test_resolve_refuses(workspace, path, message):
    with pytest.raises(PathNotAllowed) as info:
        Workspace(workspace).resolve_memory_path(path)
    assert message in str(info.value)


def test_resolve_refuses_an_absolute_path_outside(workspace, tmp_path):
    outside = write(tmp_path, "outside/x.md", "x\n")

    with pytest.raises(PathNotAllowed, match="outside the workspace"):
        Workspace(workspace).resolve_memory_path(str(outside))


def test_resolve_refuses_a_sibling_folder_sharing_the_name_prefix(workspace):
    # /…/ws-evil starts with the string /…/ws but is not inside it.
    sibling = write(workspace.parent, f"{workspace.name}-evil/memory/x.md", "x\n")

    with pytest.raises(PathNotAllowed, match="outside the workspace"):
        Workspace(workspace).resolve_memory_path(str(sibling))


def test_resolve_refuses_a_symlinked_file_even_inside(workspace):
    write(workspace, "memory/real.md", "real\n")
    os.symlink(workspace / "memory" / "real.md", workspace / "memory" / "alias.md")
    ws = Workspace(workspace)

    with pytest.raises(PathNotAllowed, match="symlink"):
        ws.resolve_memory_path("memory/alias.md")
    with pytest.raises(PathNotAllowed, match="symlink"):
        ws.resolve_memory_path(str(workspace / "memory" / "alias.md"))


def test_resolve_refuses_a_symlinked_parent_folder(workspace):
    write(workspace, "memory/real/x.md", "x\n")
    os.symlink(workspace / "memory" / "real", workspace / "memory" / "link")

    with pytest.raises(PathNotAllowed, match="symlink"):
        Workspace(workspace).resolve_memory_path("memory/link/x.md")


def test_resolve_refuses_a_symlinked_memory_folder(tmp_path):
    root, _ = init_workspace(tmp_path / "ws")
    write(tmp_path, "outside/x.md", "secret\n")
    (root / "memory").rmdir()
    os.symlink(tmp_path / "outside", root / "memory")

    with pytest.raises(PathNotAllowed, match="symlink"):
        Workspace(root).resolve_memory_path("memory/x.md")


def test_resolve_refuses_a_symlinked_memory_file(workspace, tmp_path):
    write(tmp_path, "outside/secret.md", "secret\n")
    (workspace / "MEMORY.md").unlink()
    os.symlink(tmp_path / "outside" / "secret.md", workspace / "MEMORY.md")

    with pytest.raises(PathNotAllowed, match="symlink"):
        Workspace(workspace).resolve_memory_path("MEMORY.md")


def test_resolve_allows_files_under_extra_paths(workspace, tmp_path):
    write(workspace, "docs/a.md", "a\n")
    write(workspace, "CLAUDE.md", "rules\n")
    outside = tmp_path / "automem"
    inner = write(outside, "m.md", "m\n")
    ws = Workspace(workspace, extra_paths=("docs", "CLAUDE.md", str(outside)))

    assert ws.resolve_memory_path("docs/a.md") == workspace / "docs" / "a.md"
    assert ws.resolve_memory_path("CLAUDE.md") == workspace / "CLAUDE.md"
    assert ws.resolve_memory_path(str(inner)) == inner
    with pytest.raises(PathNotAllowed, match=r"\.md"):
        ws.resolve_memory_path(str(outside / "m.txt"))
    with pytest.raises(PathNotAllowed, match="outside the workspace"):
        ws.resolve_memory_path(str(tmp_path / "automem-other" / "m.md"))


def test_resolve_refuses_a_symlink_inside_an_extra_path(workspace, tmp_path):
    outside = tmp_path / "automem"
    write(outside, "m.md", "m\n")
    write(tmp_path, "secret/s.md", "secret\n")
    os.symlink(tmp_path / "secret" / "s.md", outside / "link.md")
    ws = Workspace(workspace, extra_paths=(str(outside),))

    with pytest.raises(PathNotAllowed, match="symlink"):
        ws.resolve_memory_path(str(outside / "link.md"))


SEGMENTS = [
    "..",
    ".",
    "",
    "memory",
    "skills",
    "x.md",
    "MEMORY.md",
    "USER.md",
    "a",
    ".memdir",
    "docs",
]


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    prefix=st.sampled_from(["", "/", "ROOT/", "OUTSIDE/", "ROOT/../", "./"]),
    segments=st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=6),
)
def test_resolve_never_escapes(workspace, tmp_path, prefix, segments):
    outside = (tmp_path / "outside").resolve()
    ws = Workspace(workspace, extra_paths=("docs", str(outside)))
    prefix = prefix.replace("ROOT", str(workspace)).replace("OUTSIDE", str(outside))
    path = prefix + "/".join(segments)

    try:
        result = ws.resolve_memory_path(path)
    except PathNotAllowed:
        return

    normal = Path(os.path.normpath(result))
    assert result.name.endswith(".md")
    assert ".." not in result.parts
    if normal.is_relative_to(outside):
        return
    assert normal.is_relative_to(workspace)
    assert result.resolve().is_relative_to(workspace)
    first = normal.relative_to(workspace).parts[0]
    assert first in ("MEMORY.md", "memory", "skills", "docs")


# --- is_daily_log --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("memory/2026-01-05.md", "2026-01-05"),
        ("memory/1999-12-31.md", "1999-12-31"),
        ("memory/2026-01-05-redis-outage.md", None),
        ("memory/redis.md", None),
        ("memory/sub/2026-01-05.md", None),
        ("2026-01-05.md", None),
        ("MEMORY.md", None),
        ("skills/2026-01-05.md", None),
        ("memory/2026-1-5.md", None),
        ("memory/2026-01-05.txt", None),
    ],
)
def test_is_daily_log(path, expected):
    assert is_daily_log(path) == expected


@pytest.mark.parametrize("path", ["memory/2026-13-45.md", "memory/2026-02-30.md"])
def test_is_daily_log_rejects_impossible_dates(path):
    assert is_daily_log(path) is None


# --- atomic_write --------------------------------------------------------------------------


def test_atomic_write_creates_and_replaces(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    target = folder / "note.md"

    atomic_write(target, "first 缓存\n")
    assert target.read_text(encoding="utf-8") == "first 缓存\n"

    atomic_write(target, "second\n")
    assert target.read_text(encoding="utf-8") == "second\n"
    assert os.listdir(folder) == ["note.md"]


def test_atomic_write_keeps_the_file_mode(tmp_path):
    target = write(tmp_path, "note.md", "old\n")
    target.chmod(0o640)

    atomic_write(target, "new\n")

    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert target.read_text(encoding="utf-8") == "new\n"


def test_atomic_write_failure_keeps_old_content(tmp_path, monkeypatch):
    target = write(tmp_path, "notes/note.md", "old content\n")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)

    with pytest.raises(OSError, match="No space left"):
        atomic_write(target, "new content\n")

    assert target.read_text(encoding="utf-8") == "old content\n"
    assert os.listdir(target.parent) == ["note.md"]


def test_atomic_write_failure_during_fsync_leaves_no_temp(tmp_path, monkeypatch):
    target = write(tmp_path, "notes/note.md", "old content\n")

    def broken_fsync(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken_fsync)

    with pytest.raises(OSError, match="Input/output"):
        atomic_write(target, "new content\n")

    assert target.read_text(encoding="utf-8") == "old content\n"
    assert os.listdir(target.parent) == ["note.md"]


# --- locked_append -------------------------------------------------------------------------


def test_locked_append_creates_the_file(tmp_path):
    target = tmp_path / "memory" / "2026-01-05.md"

    start = locked_append(target, "- first\n", lock_dir=tmp_path / "locks")

    assert start == 1
    assert target.read_text(encoding="utf-8") == "- first\n"


def test_locked_append_returns_the_start_line(tmp_path):
    target = write(tmp_path, "log.md", "a\nb\n")
    locks = tmp_path / "locks"

    assert locked_append(target, "c\nd\n", lock_dir=locks) == 3
    assert locked_append(target, "e\n", lock_dir=locks) == 5
    assert target.read_text(encoding="utf-8") == "a\nb\nc\nd\ne\n"


def test_locked_append_adds_a_missing_newline(tmp_path):
    target = write(tmp_path, "log.md", "a\nb")

    start = locked_append(target, "c\n", lock_dir=tmp_path / "locks")

    assert start == 3
    assert target.read_text(encoding="utf-8") == "a\nb\nc\n"
    assert target.read_text(encoding="utf-8").split("\n")[start - 1] == "c"


def test_locked_append_to_an_empty_file(tmp_path):
    target = write(tmp_path, "log.md", "")

    assert locked_append(target, "x\n", lock_dir=tmp_path / "locks") == 1
    assert target.read_text(encoding="utf-8") == "x\n"


def test_locked_append_times_out_while_another_holder_has_the_lock(tmp_path):
    target = write(tmp_path, "log.md", "")
    locks = tmp_path / "locks"
    locked_append(target, "x\n", lock_dir=locks)
    (lock_file,) = locks.glob("*.lock")

    with FileLock(str(lock_file)), pytest.raises(WorkspaceError, match="write lock"):
        locked_append(target, "y\n", lock_dir=locks, timeout=0.1)

    assert target.read_text(encoding="utf-8") == "x\n"


def _append_many(path: str, lock_dir: str, tag: str, count: int, go, results) -> None:
    """Child process: wait for the start signal, then append ``count`` numbered lines."""
    go.wait(60)
    starts = []
    for n in range(count):
        line = f"{tag}-{n:03d} " + tag * 150 + "\n"
        starts.append(locked_append(Path(path), line, lock_dir=Path(lock_dir)))
    results.put((tag, starts))


def test_locked_append_from_two_processes(tmp_path):
    target = tmp_path / "memory" / "2026-01-05.md"
    locks = tmp_path / "locks"
    ctx = multiprocessing.get_context("spawn")
    go = ctx.Event()
    results = ctx.Queue()
    workers = [
        ctx.Process(target=_append_many, args=(str(target), str(locks), tag, 200, go, results))
        for tag in ("a", "b")
    ]
    for worker in workers:
        worker.start()
    go.set()
    collected = dict(results.get(timeout=120) for _ in workers)
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0

    lines = target.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == ""
    lines = lines[:-1]
    assert len(lines) == 400
    pattern = re.compile(r"^([ab])-(\d{3}) (\1{150})$")
    assert all(pattern.match(line) for line in lines)
    for tag in ("a", "b"):
        own = [line for line in lines if line.startswith(f"{tag}-")]
        assert own == [f"{tag}-{n:03d} " + tag * 150 for n in range(200)]
        # Each returned start line points at the line that call wrote.
        for n, start in enumerate(collected[tag]):
            assert lines[start - 1].startswith(f"{tag}-{n:03d} ")


def test_a_chinese_sample_workspace_keeps_the_chinese_sections(tmp_path: Path) -> None:
    root, created = init_workspace(tmp_path / "notes", "zh", sample=True)
    text = (root / "MEMORY.md").read_text(encoding="utf-8")
    assert text.startswith("# 长期记忆\n")
    for title in ("用户偏好", "核心决策", "经验教训", "项目事实", "待办事项"):
        assert f"\n## {title}\n" in text
    assert "## Preferences" not in text and "代码注释用英文，文档用中文。" in text
    assert "memory/2026-11-28.md" in created
