"""The file primitives: reads that never follow a link or open a FIFO, writes that never go
through one, temp files kept out of the notes and cleaned."""

from __future__ import annotations

import errno
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from memdir.errors import PathNotAllowed, ReadOnly, WorkspaceError
from memdir.workspace.fileio import (
    TEMP_NAME_RE,
    append_whole,
    atomic_write,
    clean_stale_temp_files,
    folder_read_only,
    locked_append,
    read_only_error,
    read_regular_file,
)


def test_read_regular_file_reads_and_limits(tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    path.write_bytes(b"0123456789" * 300_000)
    assert read_regular_file(path) == path.read_bytes()
    assert read_regular_file(path, limit=15) == b"012345678901234"


def test_read_regular_file_refuses_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "real.md").write_text("x", encoding="utf-8")
    (tmp_path / "link.md").symlink_to(tmp_path / "real.md")
    with pytest.raises(PathNotAllowed, match="symlink"):
        read_regular_file(tmp_path / "link.md")


def test_read_regular_file_refuses_a_folder(tmp_path: Path) -> None:
    (tmp_path / "dir.md").mkdir()
    with pytest.raises(PathNotAllowed, match="folder"):
        read_regular_file(tmp_path / "dir.md")


def test_read_regular_file_never_blocks_on_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "x.md"
    os.mkfifo(fifo)
    errors: list[BaseException] = []

    def read() -> None:
        try:
            read_regular_file(fifo)
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "reading a FIFO blocked"
    assert isinstance(errors[0], PathNotAllowed) and "FIFO" in str(errors[0])


def test_read_regular_file_refuses_a_socket(tmp_path: Path) -> None:
    path = tmp_path / "s.md"
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(path))
        with pytest.raises(OSError):  # a socket cannot even be opened: never read
            read_regular_file(path)
    finally:
        sock.close()


def test_read_regular_file_missing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_regular_file(tmp_path / "nope.md")


def test_atomic_write_refuses_a_symlink_and_leaves_its_target(tmp_path: Path) -> None:
    target = tmp_path / "outside.txt"
    target.write_text("precious\n", encoding="utf-8")
    link = tmp_path / "MEMORY.md"
    link.symlink_to(target)
    with pytest.raises(PathNotAllowed, match="symlink"):
        atomic_write(link, "new\n")
    assert link.is_symlink() and target.read_text(encoding="utf-8") == "precious\n"


def test_atomic_write_refuses_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "MEMORY.md"
    os.mkfifo(fifo)
    with pytest.raises(PathNotAllowed, match="FIFO"):
        atomic_write(fifo, "new\n")


def test_atomic_write_puts_its_temp_file_in_tmp_dir(tmp_path: Path, monkeypatch) -> None:
    seen: list[str] = []
    real_replace = os.replace

    def spy(src, dst):  # type: ignore[no-untyped-def]
        seen.append(str(src))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    tmp_dir = tmp_path / ".memdir" / "tmp"
    atomic_write(tmp_path / "MEMORY.md", "hello\n", tmp_dir=tmp_dir)
    assert (tmp_path / "MEMORY.md").read_text(encoding="utf-8") == "hello\n"
    assert Path(seen[0]).parent == tmp_dir
    assert TEMP_NAME_RE.match(Path(seen[0]).name)
    assert not list(tmp_dir.iterdir())


def test_locked_append_refuses_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "outside.txt"
    target.write_text("precious\n", encoding="utf-8")
    link = tmp_path / "DREAMS.md"
    link.symlink_to(target)
    with pytest.raises(PathNotAllowed, match="symlink"):
        locked_append(link, "entry\n", lock_dir=tmp_path / "locks")
    assert target.read_text(encoding="utf-8") == "precious\n"


def test_locked_append_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "2026-11-30.md"
    os.mkfifo(fifo)
    with pytest.raises(PathNotAllowed, match="FIFO"):
        locked_append(fifo, "entry\n", lock_dir=tmp_path / "locks")


@pytest.mark.parametrize("mode", [0o444, 0o400, 0o464, 0o555])
def test_a_file_made_read_only_is_neither_replaced_nor_appended(tmp_path: Path, mode: int) -> None:
    """No write bit for the owner: a person made it read-only. An atomic replace (a rename over
    it) would succeed anyway, and root may write any file, so the mode decides."""
    path = tmp_path / "MEMORY.md"
    path.write_text("mine\n", encoding="utf-8")
    path.chmod(mode)
    tmp_dir = tmp_path / "tmp"
    with pytest.raises(ReadOnly, match=rf"MEMORY\.md is read-only \(mode 0{mode:o}\)"):
        atomic_write(path, "replaced\n", tmp_dir=tmp_dir)
    with pytest.raises(ReadOnly, match="chmod u\\+w"):
        locked_append(path, "appended\n", lock_dir=tmp_path / "locks")
    assert path.read_text(encoding="utf-8") == "mine\n"
    assert path.stat().st_mode & 0o777 == mode
    assert not tmp_dir.exists() or not list(tmp_dir.iterdir())


@pytest.mark.parametrize("mode", [0o644, 0o600, 0o664])
def test_a_file_its_owner_may_write_is_written(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_text("mine\n", encoding="utf-8")
    path.chmod(mode)
    atomic_write(path, "replaced\n")
    assert locked_append(path, "appended\n", lock_dir=tmp_path / "locks") == 2
    path.chmod(0o644)
    assert path.read_text(encoding="utf-8") == "replaced\nappended\n"


def test_a_write_the_system_refuses_names_the_place(tmp_path: Path) -> None:
    path = tmp_path / "memory" / "2026-11-30.md"
    lock = tmp_path / ".memdir" / "locks" / "x.lock"
    rofs = read_only_error(path, OSError(errno.EROFS, "Read-only file system", str(path)))
    assert str(rofs).startswith(f"cannot write {path}: it is on a read-only file system")
    assert "nothing was written" in str(rofs) and "remount it read-write" in str(rofs)
    denied = read_only_error(path, PermissionError(errno.EACCES, "Permission denied", str(lock)))
    assert isinstance(denied, ReadOnly) and "Permission denied" in str(denied)
    assert str(lock) in str(denied) or str(path) in str(denied)
    assert folder_read_only(tmp_path) is None and folder_read_only(tmp_path / "nope") is None


def test_clean_stale_temp_files_removes_only_old_temp_files(tmp_path: Path) -> None:
    old = time.time() - 7200
    stale = tmp_path / ".MEMORY.md.ab12CD34.tmp"
    fresh = tmp_path / ".MEMORY.md.zz99yy88.tmp"
    other = tmp_path / ".notes.tmp"
    for path in (stale, fresh, other):
        path.write_text("x", encoding="utf-8")
    os.utime(stale, (old, old))
    os.utime(other, (old, old))
    removed = clean_stale_temp_files([tmp_path, tmp_path / "missing"])
    assert removed == [str(stale)]
    assert fresh.exists() and other.exists()


def test_append_whole_writes_every_byte_when_the_system_writes_a_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "log.md"
    path.write_text("- old\n", encoding="utf-8")
    real_write = os.write
    calls: list[int] = []

    def short_write(fd: int, data: bytes | memoryview) -> int:  # the OS may write a part
        calls.append(len(data))
        return real_write(fd, bytes(data[:7]))

    monkeypatch.setattr(os, "write", short_write)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        append_whole(fd, b"- a fact of some length\n", path)
    finally:
        os.close(fd)
    assert path.read_text(encoding="utf-8") == "- old\n- a fact of some length\n"
    assert len(calls) > 1


def test_a_full_disk_mid_append_leaves_the_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "log.md"
    path.write_text("- old\n", encoding="utf-8")
    real_write = os.write
    state = {"n": 0}

    def fill_up(fd: int, data: bytes | memoryview) -> int:
        state["n"] += 1
        if state["n"] > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, bytes(data[:5]))

    monkeypatch.setattr(os, "write", fill_up)
    with pytest.raises(WorkspaceError, match="disk is full"):
        locked_append(path, "- a fact that does not fit\n", lock_dir=tmp_path / "locks")
    monkeypatch.undo()
    assert path.read_text(encoding="utf-8") == "- old\n"
