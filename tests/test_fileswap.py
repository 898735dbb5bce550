"""Replacing a file a person may be writing (issue 35): only while it holds what the edit was
made on, and with what they wrote to the old file during the swap carried over.

A person's writer is played by a real descriptor opened before the swap and written after it,
in a thread, as ``echo >>`` or an editor does; the replace waits until nobody has the old file
open for writing (a read lease), so the test is not a race.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memdir.errors import PathNotAllowed, ReadOnly
from memdir.workspace.fileswap import replace_unless_changed

OLD = b"# Memory\n\n## Facts\n- one\n"
NEW = b"# Memory\n\n## Facts\n- one\n- memdir's fact\n"


def later(action: Callable[[], None], delay: float = 0.3) -> threading.Thread:
    def run() -> None:
        time.sleep(delay)
        action()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_replaces_a_file_that_holds_what_was_expected(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_bytes(OLD)
    path.chmod(0o640)
    done = replace_unless_changed(path, OLD, NEW, tmp_dir=tmp_path / "tmp")
    assert (done.status, done.carried) == ("swapped", b"")
    assert path.read_bytes() == NEW
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert list((tmp_path / "tmp").iterdir()) == []  # no temp file left


def test_a_file_that_changed_is_not_written(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_bytes(OLD + b"- the person's line\n")
    done = replace_unless_changed(path, OLD, NEW)
    assert (done.status, done.now) == ("changed", OLD + b"- the person's line\n")
    assert path.read_bytes() == OLD + b"- the person's line\n"


def test_a_new_file_is_made_only_while_there_is_none(tmp_path: Path) -> None:
    path = tmp_path / "new.md"
    assert replace_unless_changed(path, None, NEW).status == "swapped"
    assert path.read_bytes() == NEW
    again = replace_unless_changed(path, None, b"other\n")
    assert (again.status, again.now) == ("changed", NEW)
    gone = replace_unless_changed(tmp_path / "gone.md", OLD, NEW)
    assert (gone.status, gone.now) == ("changed", None)
    assert not (tmp_path / "gone.md").exists()


def test_a_line_appended_to_the_old_file_during_the_swap_is_carried(tmp_path: Path) -> None:
    """The person's ``echo >>`` opened the file before the swap and writes after it: on
    9657cf2 (a plain rename) that line went to the replaced file and was lost."""
    path = tmp_path / "MEMORY.md"
    path.write_bytes(OLD)
    person = os.open(path, os.O_WRONLY | os.O_APPEND)

    def append() -> None:
        os.write(person, b"- the person's late line\n")
        os.close(person)

    thread = later(append)
    done = replace_unless_changed(path, OLD, NEW)
    thread.join()
    assert (done.status, done.carried) == ("swapped", b"- the person's late line\n")
    assert path.read_bytes() == NEW + b"- the person's late line\n"


def test_an_edit_in_place_during_the_swap_is_handed_back(tmp_path: Path) -> None:
    """An editor that rewrites the old file in place after the swap: the caller gets the
    person's text to redo its edit on, and what the path holds now."""
    path = tmp_path / "MEMORY.md"
    path.write_bytes(OLD)
    editor = os.open(path, os.O_RDWR)
    edited = b"# Memory\n\n## Facts\n- one, edited\n"

    def save() -> None:
        os.ftruncate(editor, 0)
        os.pwrite(editor, edited, 0)
        os.close(editor)

    thread = later(save)
    done = replace_unless_changed(path, OLD, NEW)
    thread.join()
    assert (done.status, done.theirs, done.now) == ("displaced", edited, NEW)


def test_refuses_what_atomic_write_refuses(tmp_path: Path) -> None:
    (tmp_path / "real.md").write_bytes(OLD)
    (tmp_path / "link.md").symlink_to(tmp_path / "real.md")
    with pytest.raises(PathNotAllowed, match="symlink"):
        replace_unless_changed(tmp_path / "link.md", OLD, NEW)
    os.mkfifo(tmp_path / "fifo.md")
    with pytest.raises(PathNotAllowed, match="FIFO"):
        replace_unless_changed(tmp_path / "fifo.md", OLD, NEW)
    locked = tmp_path / "locked.md"
    locked.write_bytes(OLD)
    locked.chmod(0o444)
    with pytest.raises(ReadOnly, match="read-only"):
        replace_unless_changed(locked, OLD, NEW)
    assert (tmp_path / "real.md").read_bytes() == OLD and locked.read_bytes() == OLD
