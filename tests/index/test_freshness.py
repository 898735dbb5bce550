"""What a search looks at before answering (docs/design.md#index): every file only when a
folder changed, this process wrote, a watcher has unsynced changes, or the last look is old."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import memdir.index.freshness as freshness
from memdir import FakeEmbedder, Memory
from memdir.watch import WorkspaceWatcher
from tests.helpers import wait_for, write


def _edit_in_place(path: Path, text: str) -> None:
    """Rewrite a file's content without touching its folder (as an editor saving in place)."""
    with path.open("r+", encoding="utf-8") as fh:
        fh.seek(0)
        fh.write(text)
        fh.truncate()
    later = time.time_ns() + 1_000_000_000
    os.utime(path, ns=(later, later))


@pytest.fixture
def searched(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Memory]:
    """A Memory over one note that has searched once; full looks only when something says so
    (the interval is an hour)."""
    monkeypatch.setattr(freshness, "FULL_SCAN_S", 3600.0)
    write(workspace, "memory/a.md", "the heron nests by the pond\n")
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        mem.search("heron")
        yield mem


def test_repeated_searches_do_not_look_at_every_file(
    searched: Memory, full_looks: list[int]
) -> None:
    looked = len(full_looks)
    for _ in range(5):
        assert searched.search("heron").results
    assert len(full_looks) == looked


def test_a_new_or_deleted_file_is_seen_at_once(searched: Memory, workspace: Path) -> None:
    write(workspace, "memory/b.md", "a zeppelin over the lake\n")  # another program
    assert searched.search("zeppelin").results[0].path == "memory/b.md"
    (workspace / "memory" / "b.md").unlink()
    assert not any(r.path == "memory/b.md" for r in searched.search("zeppelin").results)


def test_a_rename_and_an_editor_save_by_rename_are_seen_at_once(
    searched: Memory, workspace: Path
) -> None:
    (workspace / "memory" / "a.md").rename(workspace / "memory" / "b.md")
    assert [r.path for r in searched.search("heron").results] == ["memory/b.md"]
    # An editor saves by writing a temporary file and renaming it over the note.
    tmp = write(workspace, "memory/.b.md.swp", "a kingfisher dives in the pond\n")
    os.replace(tmp, workspace / "memory" / "b.md")
    assert searched.search("kingfisher").results[0].path == "memory/b.md"


def test_an_edit_in_place_is_seen_within_the_full_scan_interval(
    searched: Memory, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _edit_in_place(workspace / "memory" / "a.md", "a kingfisher dives in the pond\n")
    assert not searched.search("kingfisher").results  # the folder did not change
    monkeypatch.setattr(freshness, "FULL_SCAN_S", 0.0)  # the interval has passed
    assert searched.search("kingfisher").results[0].path == "memory/a.md"


def test_what_this_process_writes_is_seen_at_once(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(freshness, "FULL_SCAN_S", 3600.0)
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        mem.search("anything")
        mem.write("the kingfisher nests in the riverbank")  # appends to today's log in place
        assert mem.search("kingfisher riverbank").results


def test_with_a_watcher_a_search_looks_only_at_unsynced_changes(
    workspace: Path, full_looks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(freshness, "FULL_SCAN_S", 0.0)  # without the watcher: every search
    write(workspace, "memory/a.md", "the heron nests by the pond\n")
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        with WorkspaceWatcher(mem, debounce=0.2) as watcher:
            deadline = time.monotonic() + 10
            while watcher.unsynced() and time.monotonic() < deadline:
                time.sleep(0.05)  # the initial sync
            looked = len(full_looks)
            for _ in range(3):
                mem.search("heron")
            assert len(full_looks) == looked
            path = workspace / "memory" / "a.md"
            _edit_in_place(path, "a kingfisher dives in the pond\n")
            deadline = time.monotonic() + 10
            while not mem.search("kingfisher").results and time.monotonic() < deadline:
                time.sleep(0.05)
            assert mem.search("kingfisher").results[0].path == "memory/a.md"
        assert mem.index.freshness.watcher is None


def test_a_search_looks_only_at_the_files_the_watcher_saw_change(
    workspace: Path, full_looks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(freshness, "FULL_SCAN_S", 0.0)  # by the other rules: every search
    write(workspace, "memory/a.md", "the heron nests by the pond\n")
    write(workspace, "memory/sub/b.md", "an otter swims upstream\n")
    # The watcher's own syncs wait 30 s: the searches below must find the changes.
    with (
        Memory(workspace, embedder=FakeEmbedder()) as mem,
        WorkspaceWatcher(mem, debounce=30.0, max_delay=30.0) as watcher,
    ):
        assert wait_for(lambda: watcher.pending() == frozenset())  # the first sync
        looked = len(full_looks)
        path = workspace / "memory" / "a.md"
        _edit_in_place(path, "a kingfisher dives in the pond\n")
        assert wait_for(lambda: watcher.pending() == {str(path)})
        assert mem.search("kingfisher").results[0].path == "memory/a.md"
        assert len(full_looks) == looked  # that one file, not every file
        # A folder moved: the watcher cannot list its files, so every file is looked at.
        (workspace / "memory" / "sub").rename(workspace / "memory" / "moved")
        assert wait_for(lambda: watcher.pending() is None)
        assert mem.search("otter upstream").results[0].path == "memory/moved/b.md"
        assert len(full_looks) == looked + 1


def test_the_watcher_syncs_the_files_it_saw_change_without_a_full_look(
    workspace: Path, full_looks: list[int]
) -> None:
    write(workspace, "memory/a.md", "the heron nests by the pond\n")
    reports: list[object] = []
    with (
        Memory(workspace, embedder=FakeEmbedder()) as mem,
        WorkspaceWatcher(mem, debounce=0.1, on_sync=reports.append) as watcher,
    ):
        assert wait_for(lambda: watcher.syncs == 1)
        looked = len(full_looks)
        _edit_in_place(workspace / "memory" / "a.md", "a kingfisher dives in the pond\n")
        write(workspace, "memory/new.md", "a new note about herons\n")
        assert wait_for(lambda: watcher.syncs >= 2 and watcher.pending() == frozenset())
        assert len(full_looks) == looked
        assert sum(r.updated + r.added for r in reports[1:]) == 2  # type: ignore[attr-defined]
        assert mem.search("kingfisher").results[0].path == "memory/a.md"


def test_in_a_big_vault_a_full_look_waits_twenty_times_its_own_cost(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full look that takes 0.5 s (10,000 files) is not repeated every 2 s: the interval
    grows to 20× its cost, so looking stays ≤ 5 % of the time."""
    write(workspace, "memory/a.md", "the heron nests by the pond\n")
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        mem.search("heron")
        check = mem.index.freshness
        assert check.trust_seconds() == freshness.FULL_SCAN_S  # a small vault: 2 s
        check._scan_seconds = 0.5
        assert check.trust_seconds() == 10.0
        check._scanned_at = time.monotonic() - 5.0  # 5 s ago: past 2 s, within 10 s
        _edit_in_place(workspace / "memory" / "a.md", "a kingfisher dives in the pond\n")
        assert not mem.search("kingfisher").results
        check._scanned_at = time.monotonic() - 11.0
        assert mem.search("kingfisher").results[0].path == "memory/a.md"
