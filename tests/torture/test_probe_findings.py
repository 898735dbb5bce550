"""Reproductions of the nine defects the hostile-input probe of issue 14 found (commit 87adcb2).

Each test is named after its finding; all of them failed on that commit. The wider torture
suite (generated inputs, kill -9, corruption, concurrency) lives beside this file.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from memdir import FakeEmbedder, Memory, init_workspace
from memdir.cli import cli
from memdir.errors import MemdirError, PathNotAllowed, WorkspaceError
from memdir.lifecycle.capture import AutoCapture
from memdir.workspace.layout import Workspace
from tests.helpers import write

NOW = datetime(2026, 11, 30, 9, 0)
OUTSIDE_TEXT = "outside-only words: zanzibar quokka periwinkle"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside the workspace with a secret note and a precious file."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.md").write_text(f"# secret\n{OUTSIDE_TEXT}\n", encoding="utf-8")
    (folder / "precious.txt").write_text("precious\n", encoding="utf-8")
    return folder


@pytest.fixture
def fake_config(isolated_env: Path) -> Path:
    (isolated_env / "config.toml").write_text('[embedding]\nprovider = "fake"\n', encoding="utf-8")
    return isolated_env


# -- 1. escape through a symlinked extra path -------------------------------------------------


def test_finding1_symlinked_extra_path_does_not_escape(workspace, outside, fake_config):
    (workspace / ".memdir" / "config.toml").write_text(
        '[index]\nextra_paths = ["notes"]\n', encoding="utf-8"
    )
    (workspace / "notes").symlink_to(outside, target_is_directory=True)
    with Memory(workspace) as mem:
        for path in (str(outside / "secret.md"), "notes/secret.md"):
            with pytest.raises(PathNotAllowed):
                mem.get(path)
        assert not [e for e in mem.workspace.iter_files() if "secret" in e.path]
        hits = mem.search("zanzibar quokka periwinkle", min_score=0.0).results
        assert not [h for h in hits if "secret" in h.path]
        assert any("notes" in note for note in mem.status()["notes"])


# -- 2. writers follow symlinks -----------------------------------------------------------------


def test_finding2_diary_is_not_appended_through_a_symlink(workspace, outside):
    from memdir.dreaming.promotion import append_diary

    (workspace / "DREAMS.md").symlink_to(outside / "precious.txt")
    with pytest.raises(PathNotAllowed, match="symlink"):
        append_diary(Workspace(workspace), "## entry\n")
    assert (outside / "precious.txt").read_text(encoding="utf-8") == "precious\n"


def test_finding2_dream_does_not_copy_a_symlinked_memory_file(workspace, outside):
    from memdir.dreaming.promotion import promote

    target = outside / "MEMORY.md"
    target.write_text(f"# outside\n{OUTSIDE_TEXT}\n", encoding="utf-8")
    (workspace / "MEMORY.md").unlink()
    (workspace / "MEMORY.md").symlink_to(target)
    with pytest.raises(PathNotAllowed, match="symlink"):
        promote(Workspace(workspace), [], day="2026-11-30", apply=True)
    assert (workspace / "MEMORY.md").is_symlink()
    assert target.read_text(encoding="utf-8") == f"# outside\n{OUTSIDE_TEXT}\n"


def test_finding2_init_does_not_copy_a_symlinked_gitignore(tmp_path, outside):
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".gitignore").symlink_to(outside / "precious.txt")
    with pytest.raises(PathNotAllowed, match="symlink"):
        init_workspace(root)
    assert (root / ".gitignore").is_symlink()
    assert (outside / "precious.txt").read_text(encoding="utf-8") == "precious\n"


def test_finding2_daily_log_symlink_is_refused(memory, workspace, outside, monkeypatch):
    monkeypatch.setenv("MEMDIR_NOW", "2026-11-30T09:00:00")
    (workspace / "memory" / "2026-11-30.md").symlink_to(outside / "precious.txt")
    with pytest.raises(PathNotAllowed):
        memory.write("The staging database listens on port 5433")
    assert (outside / "precious.txt").read_text(encoding="utf-8") == "precious\n"


# -- 3. secrets kept word for word -------------------------------------------------------------


def test_finding3_auto_capture_does_not_keep_secrets(workspace, fake_embedder):
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    capture = AutoCapture(Workspace(workspace))
    capture.consider("Remember: my password is hunter2-Secret!", now=NOW)
    capture.consider(f"Remember my GitHub token is {token}", now=NOW)
    log = workspace / "memory" / "2026-11-30.md"
    text = log.read_text(encoding="utf-8") if log.exists() else ""
    assert "hunter2-Secret!" not in text
    assert token not in text
    with Memory(workspace, embedder=fake_embedder, scope="shared") as mem:
        for query in ("password hunter2", "GitHub token"):
            for hit in mem.search(query, min_score=0.0).results:
                assert "hunter2-Secret!" not in hit.snippet and token not in hit.snippet


# -- 4. one bad entry breaks everything --------------------------------------------------------


def test_finding4_a_non_utf8_file_name_is_skipped_with_a_warning(memory, workspace):
    write(workspace, "memory/good.md", "# good\nThe deploy key rotates every Monday.\n")
    bad = os.fsencode(workspace / "memory") + b"/bad-\xff\xfe.md"
    with open(bad, "wb") as fh:
        fh.write(b"# bad name\nstill a note\n")
    memory.sync()
    hits = memory.search("deploy key rotates").results
    assert hits and hits[0].path == "memory/good.md"
    status = memory.status()
    assert any("UTF-8" in w for w in status["file_warnings"].values())


def test_finding4_deeply_nested_folders_are_skipped_with_a_warning(memory, workspace):
    write(workspace, "memory/good.md", "# good\nThe deploy key rotates every Monday.\n")
    deep = workspace / "memory" / Path(*(["d"] * 950))
    deep.mkdir(parents=True)
    (deep / "deep.md").write_text("# deep\nburied note\n", encoding="utf-8")
    memory.sync()
    hits = memory.search("deploy key rotates").results
    assert hits and hits[0].path == "memory/good.md"
    assert any("deep" in w for w in memory.status()["file_warnings"].values())


# -- 5. corruption inside the index file is never recovered -------------------------------------


def _overwrite_pages(db: Path, pages: int = 3) -> None:
    size = db.stat().st_size
    page = 4096
    with db.open("r+b") as fh:
        for n in range(pages):
            fh.seek(page * (size // page // 2 + n))
            fh.write(os.urandom(page))


def test_finding5_page_corruption_is_recovered_and_keeps_the_embedding_cache(workspace):
    for n in range(40):
        write(workspace, f"memory/topic-{n}.md", f"# topic {n}\n" + f"line {n} about cats\n" * 60)
    embedder = FakeEmbedder()
    with Memory(workspace, embedder=embedder) as mem:
        mem.sync()
    db = workspace / ".memdir" / "index.sqlite"
    sqlite3.connect(db).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
    _overwrite_pages(db)
    embedder = FakeEmbedder()
    with Memory(workspace, embedder=embedder) as mem:
        hits = mem.search("cats", min_score=0.0).results
        assert hits
        assert any("index" in note and "rebuilt" in note for note in mem.status()["notes"])
    assert sum(embedder.calls) < 40, "the rebuild re-embedded what the cache held"


# -- 6. a FIFO hangs the MCP server; get has no size limit -------------------------------------


def test_finding6_a_fifo_is_not_opened(memory, workspace):
    os.mkfifo(workspace / "memory" / "x.md")
    outcome: list[object] = []
    worker = threading.Thread(
        target=lambda: outcome.append(_catch(lambda: memory.get("memory/x.md"))), daemon=True
    )
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "memory_get blocked on a FIFO"
    assert isinstance(outcome[0], PathNotAllowed)
    memory.sync()  # the walk skips it too, with a warning
    assert any("FIFO" in w for w in memory.status()["file_warnings"].values())


def test_finding6_mcp_get_reply_is_capped(memory, workspace):
    from memdir.mcp.server import MemoryTools

    write(workspace, "memory/big.md", ("a fairly long line of notes " * 4 + "\n") * 50_000)
    reply = MemoryTools(memory).call("memory_get", {"path": "memory/big.md"})
    assert len(json.dumps(reply)) < 200_000
    assert "from" in json.dumps(reply).lower()


def _catch(fn):  # type: ignore[no-untyped-def]
    try:
        return fn()
    except Exception as exc:
        return exc


# -- 7. file names read as markup ----------------------------------------------------------------


def test_finding7_markup_in_file_names_is_printed_as_is(workspace, fake_config, monkeypatch):
    monkeypatch.setenv("MEMDIR_WORKSPACE", str(workspace))
    write(workspace, "memory/a[/x]b.md", "# weird\nmarmalade sandwich recipe\n")
    write(workspace, "memory/[bold]x.md", "# bold\nmarmalade toast recipe\n")
    runner = CliRunner()
    for args in (["index"], ["status"], ["search", "marmalade", "--min-score", "0"]):
        result = runner.invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
    out = runner.invoke(cli, ["search", "marmalade", "--min-score", "0"]).output
    assert "memory/[bold]x.md" in out
    assert "memory/a[/x]b.md" in out


# -- 8. read-only index file, stale rebuild and temp files --------------------------------------


def test_finding8_stale_rebuild_and_temp_files_are_cleaned(workspace, fake_embedder):
    dead = _dead_pid()
    stale_rebuild = workspace / ".memdir" / f"index.sqlite.rebuild-{dead}"
    stale_rebuild.write_bytes(b"x" * 1000)
    stale_tmp = workspace / ".MEMORY.md.abc12345.tmp"
    stale_tmp.write_text("half a write", encoding="utf-8")
    old = time.time() - 3 * 3600
    os.utime(stale_tmp, (old, old))
    with Memory(workspace, embedder=fake_embedder) as mem:
        mem.search("anything")
    assert not stale_rebuild.exists()
    assert not stale_tmp.exists()


def test_finding8_killed_memory_writes_leave_no_temp_in_the_workspace(memory, workspace):
    memory.write("The staging database listens on port 5433", target="memory", section="facts")
    assert not list(workspace.glob(".MEMORY.md.*.tmp"))
    # Temp files of workspace writes live in the git-ignored state folder.
    assert ".memdir/" in (workspace / ".gitignore").read_text(encoding="utf-8")


def test_finding8_a_read_only_index_file_falls_back(workspace, fake_embedder):
    write(workspace, "memory/old.md", "# old\nold otter note\n")
    with Memory(workspace, embedder=fake_embedder) as mem:
        mem.sync()
    db = workspace / ".memdir" / "index.sqlite"
    with read_only(db):
        write(workspace, "memory/new.md", "# new\nbrand new walrus note\n")
        with Memory(workspace, embedder=FakeEmbedder()) as mem:
            hits = mem.search("walrus").results
            assert [h.path for h in hits] == ["memory/new.md"]
            assert any("read-only" in note for note in mem.status()["notes"])


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """Make ``path`` unwritable, even for root (who ignores file modes): chattr +i."""
    if os.geteuid() != 0:
        path.chmod(0o444)
        yield
        path.chmod(0o644)
        return
    if shutil.which("chattr") is None:
        pytest.skip("running as root without chattr: cannot make a file read-only")
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"chattr +i failed: {done.stderr!r}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# -- 9. pathological content has a bounded cost --------------------------------------------------


def test_finding9_a_huge_single_line_costs_few_embeddings(workspace):
    embedder = FakeEmbedder()
    words = " ".join(f"w{n % 997}" for n in range(200_000))  # ~1 MB, one line
    write(workspace, "memory/one-line.md", words + "\n")
    with Memory(workspace, embedder=embedder) as mem:
        mem.sync()
        assert sum(embedder.calls) <= 64
        assert mem.status()["file_warnings"]


def test_finding9_random_bytes_are_not_embedded(workspace):
    embedder = FakeEmbedder()
    noise = bytes(b % 255 + 1 for b in os.urandom(50_000))  # no NUL byte, invalid UTF-8
    with Memory(workspace, embedder=embedder) as mem:
        mem.sync()  # MEMORY.md
        embedder.calls.clear()
        (workspace / "memory" / "noise.md").write_bytes(noise)
        mem.sync()
        assert sum(embedder.calls) == 0
        assert "memory/noise.md" in mem.status()["file_warnings"]


def test_finding9_nul_bytes_after_8k_never_reach_a_snippet(memory, workspace):
    text = "# notes\n" + "plain filler words here\n" * 500 + "the gazebo\x00 key\x00 is blue\n"
    (workspace / "memory" / "nul.md").write_bytes(text.encode("utf-8"))
    for hit in memory.search("gazebo key blue", min_score=0.0).results:
        assert "\x00" not in hit.snippet


def test_errors_are_memdir_errors() -> None:
    assert issubclass(PathNotAllowed, WorkspaceError)
    assert issubclass(WorkspaceError, MemdirError)
