"""The file watcher: index kept current without explicit syncs, debounce, filters, retries."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import memdir.watch as watch
from memdir import FakeEmbedder, Memory
from memdir.config.settings import load_config
from memdir.watch import WorkspaceWatcher, is_indexable_change, retry_when_busy
from memdir.workspace.layout import Workspace
from memdir.workspace.templates import init_workspace
from tests.helpers import wait_for, write


def wait_until_indexed(root: Path, rel: str, *, seconds: float = 10.0) -> bool:
    """Poll the index file (read-only, no sync) until it has ``rel``."""
    deadline = time.monotonic() + seconds
    db = root / ".memdir" / "index.sqlite"
    while time.monotonic() < deadline:
        if db.exists():
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
            try:
                row = conn.execute("SELECT 1 FROM files WHERE path = ?", (rel,)).fetchone()
            except sqlite3.OperationalError:
                row = None
            finally:
                conn.close()
            if row:
                return True
        time.sleep(0.1)
    return False


def test_the_watcher_indexes_a_new_file_without_a_sync(memory: Memory, workspace: Path) -> None:
    with WorkspaceWatcher(memory, debounce=0.3):
        write(workspace, "memory/2026-11-29.md", "- the zeppelin tour is booked\n")
        assert wait_until_indexed(workspace, "memory/2026-11-29.md")
        write(workspace, "skills/fly/SKILL.md", "# Fly\nhow to fly a zeppelin\n")
        assert wait_until_indexed(workspace, "skills/fly/SKILL.md")


def test_after_a_sync_the_watcher_loads_what_the_next_search_would_wait_for(
    memory: Memory, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(workspace, "memory/2026-11-29.md", "- the zeppelin tour is booked\n")
    # Below the approximate index's threshold the exact search's matrix is what is loaded.
    vectors = memory.index.lifecycle.vectors().exact  # type: ignore[attr-defined]
    loads: list[str] = []
    real = type(vectors)._update

    def update(self, store, *, same_file):  # type: ignore[no-untyped-def]
        loads.append(threading.current_thread().name)
        return real(self, store, same_file=same_file)

    monkeypatch.setattr(type(vectors), "_update", update)
    with WorkspaceWatcher(memory, debounce=0.1) as watcher:  # memdir watch: nobody searches
        assert wait_for(lambda: watcher.syncs == 1)
    assert loads == []  # no 740 MB matrix (at 10,000 files) in a process that never searches
    with WorkspaceWatcher(memory, debounce=0.1, warm=True) as watcher:  # as the MCP server
        assert wait_for(lambda: watcher.syncs == 1)
        assert loads == ["memdir-watch"]  # the matrix was loaded after the first sync
        response = memory.search("zeppelin tour")
    assert response.results and response.mode == "hybrid"
    assert loads == ["memdir-watch"]  # and the search did not load it again


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_warm_watcher_loads_jieba_once_when_the_notes_hold_chinese(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lang: str
) -> None:
    root, _ = init_workspace(tmp_path / lang, lang)
    loads: list[int] = []
    monkeypatch.setattr("memdir.memory.facade.load_segmenter", lambda: loads.append(1))
    with (
        Memory(root, embedder=FakeEmbedder()) as mem,
        WorkspaceWatcher(mem, debounce=0.1, warm=True) as watcher,
    ):
        assert wait_for(lambda: watcher.syncs == 1)
        write(root, "memory/2026-12-01.md", "- one more note\n")
        assert wait_for(lambda: watcher.syncs == 2)
    assert loads == ([1] if lang == "zh" else [])


def test_a_change_no_event_reported_is_caught_up_once_the_last_full_look_is_old(
    memory: Memory, workspace: Path, monkeypatch: pytest.MonkeyPatch, full_looks: list[int]
) -> None:
    write(workspace, "memory/seen.md", "a heron by the pond\n")
    write(workspace, "memory/unseen.md", "a heron by the river\n")
    with WorkspaceWatcher(memory, debounce=0.1) as watcher:
        assert wait_for(lambda: watcher.syncs == 1) and len(full_looks) == 1
        handler = watcher._handler
        real = handler.on_any_event

        def lossy(event):  # type: ignore[no-untyped-def]
            if "unseen" not in str(event.src_path):  # as if the queue overflowed for it
                real(event)

        monkeypatch.setattr(handler, "on_any_event", lossy)
        write(workspace, "memory/unseen.md", "a kingfisher by the river\n")
        write(workspace, "memory/seen.md", "a kingfisher by the pond\n")
        assert wait_for(lambda: watcher.syncs == 2)
        assert len(full_looks) == 1  # the last full look is recent: the seen file only
        assert [r.path for r in memory.search("kingfisher").results] == ["memory/seen.md"]
        monkeypatch.setattr(watch, "FULL_LOOK_EVERY_S", 0.0)  # now it is old
        write(workspace, "memory/seen.md", "a kingfisher dives by the pond\n")
        assert wait_for(lambda: watcher.syncs == 3)
        assert len(full_looks) == 2
        found = {r.path for r in memory.search("kingfisher").results}
    assert found == {"memory/seen.md", "memory/unseen.md"}


def test_a_big_burst_is_one_look_at_every_file(
    memory: Memory, workspace: Path, monkeypatch: pytest.MonkeyPatch, full_looks: list[int]
) -> None:
    monkeypatch.setattr(watch, "MAX_LISTED_CHANGES", 2)
    with WorkspaceWatcher(memory, debounce=0.3) as watcher:
        assert wait_for(lambda: watcher.syncs == 1) and len(full_looks) == 1
        for i in range(3):
            write(workspace, f"memory/burst{i}.md", f"burst note {i}\n")
        assert wait_for(lambda: watcher.syncs == 2)
    assert len(full_looks) == 2


def test_an_extra_folder_made_after_the_start_is_watched(tmp_path: Path, workspace: Path) -> None:
    config = load_config(None, overrides={"index": {"extra_paths": ["notes"]}})
    with (
        Memory(workspace, config=config, embedder=FakeEmbedder()) as mem,
        WorkspaceWatcher(mem, debounce=0.1) as watcher,
    ):
        assert wait_for(lambda: watcher.syncs == 1)
        assert watcher.pending() == frozenset()  # watched: not blind
        write(workspace, "notes/plan.md", "the zeppelin tour is booked\n")
        assert wait_for(lambda: watcher.syncs >= 2 and watcher.pending() == frozenset())
        time.sleep(0.3)  # the folder's own events have settled
        assert wait_for(lambda: watcher.pending() == frozenset())
        assert mem.search("zeppelin").results
        synced = watcher.syncs
        path = workspace / "notes" / "plan.md"
        path.write_text("the airship tour is booked\n", encoding="utf-8")
        assert wait_for(lambda: watcher.syncs > synced and watcher.pending() == frozenset())
        assert [r.path for r in mem.search("airship").results] == ["notes/plan.md"]


def test_a_notes_folder_created_or_moved_later_is_watched(memory: Memory, workspace: Path) -> None:
    import shutil

    shutil.rmtree(workspace / "skills")
    with WorkspaceWatcher(memory, debounce=0.3):
        write(workspace, "skills/new/SKILL.md", "# New skill\n")
        assert wait_until_indexed(workspace, "skills/new/SKILL.md")
        write(workspace, "skills/new/MORE.md", "# More\n")
        assert wait_until_indexed(workspace, "skills/new/MORE.md")
        (workspace / "skills").rename(workspace / "old-skills")
        write(workspace, "staging/fresh/SKILL.md", "# Fresh\n")
        (workspace / "staging").rename(workspace / "skills")
        assert wait_until_indexed(workspace, "skills/fresh/SKILL.md")
        write(workspace, "skills/fresh/LATER.md", "# Later\n")
        assert wait_until_indexed(workspace, "skills/fresh/LATER.md")


def test_a_burst_of_changes_is_one_sync(memory: Memory, workspace: Path) -> None:
    memory.sync()
    reports = []
    watcher = WorkspaceWatcher(memory, debounce=0.8, on_sync=reports.append, initial_sync=False)
    with watcher:
        for i in range(5):
            write(workspace, f"memory/note-{i}.md", f"- note {i}\n")
        assert wait_until_indexed(workspace, "memory/note-4.md")
        time.sleep(1.2)
    assert watcher.syncs == 1 and reports[0].added == 5


def test_state_dir_and_other_files_do_not_trigger_a_sync(memory: Memory, workspace: Path) -> None:
    watcher = WorkspaceWatcher(memory, debounce=0.2, initial_sync=False)
    with watcher:
        write(workspace, ".memdir/scratch.md", "x")
        write(workspace, "memory/picture.png", "x")
        write(workspace, "notes.md", "x")
        write(workspace, ".git/memory/x.md", "x")
        time.sleep(1.0)
    assert watcher.syncs == 0


def test_which_changes_count(workspace: Path, tmp_path: Path) -> None:
    extra = tmp_path / "project"
    extra.mkdir()
    ws = Workspace(workspace, (str(extra),))
    root = ws.root

    def check(path: Path, *, is_directory: bool = False) -> bool:
        return is_indexable_change(ws, str(path), is_directory=is_directory)

    assert check(root / "MEMORY.md")
    assert check(root / "memory" / "2026-11-30.md")
    assert check(root / "skills" / "deploy" / "SKILL.MD")
    assert check(root / "memory", is_directory=True)
    assert check(extra / "CLAUDE.md")
    assert not check(root / "USER.md")
    assert not check(root / "memory" / "a.txt")
    assert not check(root / ".memdir" / "index.sqlite-wal")
    assert not check(root / "memory" / ".hidden" / "x.md")
    assert not check(root / "memory" / ".hidden", is_directory=True)
    assert not check(root / "memory" / ".MEMORY.md.abc.tmp")
    assert not check(tmp_path / "elsewhere.md")
    assert check(root / "memory" / ".draft.md")  # listed by the walk, so watched
    assert not check(extra / ".git" / "x.md")
    hidden = Workspace(workspace, (".notes",))  # an extra path that is itself hidden
    assert is_indexable_change(hidden, str(hidden.root / ".notes" / "n.md"))
    assert not is_indexable_change(hidden, str(hidden.root / ".other" / "n.md"))


def test_continuous_changes_still_sync_within_max_delay(memory: Memory) -> None:
    watcher = WorkspaceWatcher(memory, debounce=1.0, max_delay=0.5, initial_sync=False)
    with watcher:
        started = time.monotonic()
        while watcher.syncs == 0 and time.monotonic() - started < 5:
            watcher.poke()
            time.sleep(0.05)
    assert watcher.syncs >= 1 and time.monotonic() - started < 2


def test_a_failed_sync_is_reported_and_the_watcher_goes_on(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    errors: list[Exception] = []
    calls = []

    def flaky_sync(**kwargs: object) -> object:
        calls.append(kwargs)
        if len(calls) == 1:
            raise RuntimeError("disk on fire")
        return original(**kwargs)

    original = memory.sync
    monkeypatch.setattr(memory, "sync", flaky_sync)
    watcher = WorkspaceWatcher(memory, debounce=0.1, on_error=errors.append)
    with watcher:
        deadline = time.monotonic() + 5
        while not errors and time.monotonic() < deadline:
            time.sleep(0.05)
        watcher.poke()
        while watcher.syncs == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert [str(e) for e in errors] == ["disk on fire"] and watcher.syncs == 1
    assert calls[1] == {"paths": None, "bridge": False}  # after a failure, a look at every file


def test_a_restart_while_an_old_sync_still_runs_leaves_one_loop(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    release, entered = threading.Event(), threading.Event()
    original = memory.sync

    def slow_sync(**kwargs: object) -> object:
        if not release.is_set():
            entered.set()
            release.wait(10)
        return original(**kwargs)

    monkeypatch.setattr(memory, "sync", slow_sync)
    watcher = WorkspaceWatcher(memory, debounce=0.1)
    watcher.start()
    assert entered.wait(10)  # the first sync is stuck
    watcher.stop(timeout=0.1)  # gives up waiting for it
    watcher.start()
    release.set()
    assert wait_for(lambda: watcher.syncs >= 2)  # the old sync ended, the new loop synced
    time.sleep(0.3)
    loops = [t for t in threading.enumerate() if t.name == "memdir-watch"]
    watcher.stop()
    assert len(loops) == 1


def test_a_watcher_blind_to_a_missing_extra_folder_sees_again_after_a_restart(
    workspace: Path,
) -> None:
    config = load_config(None, overrides={"index": {"extra_paths": ["projects/notes"]}})
    with Memory(workspace, config=config, embedder=FakeEmbedder()) as mem:
        watcher = WorkspaceWatcher(mem, debounce=0.1)
        with watcher:
            assert wait_for(lambda: watcher.syncs == 1)
            assert watcher.pending() is None  # nothing to watch there: searches look themselves
        (workspace / "projects" / "notes").mkdir(parents=True)
        with watcher:
            assert wait_for(lambda: watcher.syncs == 2)
            assert wait_for(lambda: watcher.pending() == frozenset())


def test_retry_when_busy() -> None:
    attempts = []

    def locked_twice() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise sqlite3.OperationalError("database is locked")
        return "ok"

    assert retry_when_busy(locked_twice, delay=0.01) == "ok" and len(attempts) == 3
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        retry_when_busy(lambda: (_ for _ in ()).throw(sqlite3.OperationalError("no such table")))
    with pytest.raises(sqlite3.OperationalError, match="busy"):
        retry_when_busy(
            lambda: (_ for _ in ()).throw(sqlite3.OperationalError("database is busy")),
            attempts=2,
            delay=0.01,
        )


def test_the_lock_is_shared_with_the_caller(memory: Memory, workspace: Path) -> None:
    lock = threading.Lock()
    watcher = WorkspaceWatcher(memory, debounce=0.1, lock=lock, initial_sync=False)
    with watcher:
        with lock:
            write(workspace, "memory/held.md", "- while the lock is held\n")
            time.sleep(0.6)
            assert watcher.syncs == 0  # waiting for the lock
        assert wait_until_indexed(workspace, "memory/held.md")


def test_memdir_watch_command_syncs_and_stops_cleanly_on_ctrl_c(
    workspace: Path, isolated_env: Path
) -> None:
    (isolated_env / "config.toml").write_text('[embedding]\nprovider = "fake"\n', encoding="utf-8")
    env = {**os.environ, "MEMDIR_HOME": str(isolated_env)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "memdir", "-w", str(workspace), "watch", "--debounce", "0.2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        write(workspace, "memory/cli.md", "- watched from the command line\n")
        assert wait_until_indexed(workspace, "memory/cli.md")
    finally:
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=15)
    assert proc.returncode == 0, stderr
    assert "watching" in stdout and "synced:" in stdout and stdout.rstrip().endswith("stopped")
