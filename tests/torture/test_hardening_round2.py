"""Issue 27's probes that need the real system: a nearly full disk (a small tmpfs), git states
a person reaches with ordinary commands, FIFOs where git looks for ignore rules, and a full
disk under the index. Each probe failed on git 51bb475 (what it lost is in its docstring).

The tmpfs probes mount a file system (root only; skipped where that is not allowed).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memdir import init_workspace
from tests.torture.conftest import TALLY

pytestmark = pytest.mark.torture

FACT = (
    "The payments reconciliation job compares the ledger with the bank statement every night "
    "at 02:30 UTC, retries three times with a five-minute backoff, pages the on-call engineer "
    "after the third failure and writes its report to s3://acme-recon/reports/YYYY-MM-DD.csv "
    "for the finance team to check (probe-326)."
)


def memdir(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memdir", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def fill(folder: Path, leave_bytes: int) -> None:
    """Fill ``folder``'s file system until about ``leave_bytes`` are free."""
    st = os.statvfs(folder)
    free = st.f_bavail * st.f_frsize
    with (folder / "filler.bin").open("wb") as fh, contextlib.suppress(OSError):
        fh.write(b"\0" * max(0, free - leave_bytes))
        fh.flush()
        os.fsync(fh.fileno())


def test_a_write_on_a_nearly_full_disk_is_whole_or_refused(tmp_path: Path) -> None:
    """A 2 MiB tmpfs filled to 0–32 free pages, the daily log's last page with 100 bytes to
    spare: ``memdir remember`` of a 326-character fact printed "remembered" and exited 0 with
    the file ending mid-line (the system wrote what fitted) and the torn text in the audit
    record. Every free-page count is tried: the write is whole, or refused with "disk is full"
    and the file as it was; the audit trail never holds text the file does not."""
    for pages in range(33):
        with tmpfs(tmp_path / f"fs{pages}", "2m") as fs:
            _one_nearly_full_write(fs, pages)


def _one_nearly_full_write(fs: Path, pages: int) -> None:
    root, _ = init_workspace(fs / "ws", "en")
    env = {"MEMDIR_HOME": str(fs / "home"), "MEMDIR_NOW": "2026-11-30T09:00:00"}
    config = '[embedding]\nprovider = "none"\n[audit]\ngit = "off"\n'
    (root / ".memdir" / "config.toml").write_text(config, encoding="utf-8")
    daily = root / "memory" / "2026-11-30.md"
    head, note = "# 2026-11-30\n\n", "- an earlier note\n"
    padding = 2 * 4096 - 100 - len(head) - len(note) - 1
    daily.write_text(head + "x" * padding + "\n" + note, encoding="utf-8")
    if pages % 2:  # half the runs with the index and the trail already there
        memdir("-w", str(root), "remember", "a first fact", env=env)
        memdir("-w", str(root), "index", env=env)
    before = daily.read_bytes()
    fill(fs, pages * 4096)
    done = memdir("-w", str(root), "remember", FACT, env=env)
    after = daily.read_bytes()
    TALLY["disk-full writes tried"] += 1
    if done.returncode == 0:
        assert after == before + f"- {FACT}\n".encode(), (pages, done.stdout)
        TALLY["disk-full writes whole"] += 1
    else:
        assert after == before, f"{pages} pages: a refused write changed the file"
        assert "disk is full" in done.stderr or "No space" in done.stderr, done.stderr
        TALLY["disk-full writes refused cleanly"] += 1
    log = root / ".memdir" / "audit.jsonl"
    if log.exists():
        for line in log.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            added = [a["text"] for f in record.get("files", []) for a in f.get("added", [])]
            assert all(a in after.decode() for a in added), "a record of text not in the file"


def test_tmpfs_helpers_clean_up(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "fs", "1m") as fs:
        (fs / "x").write_text("x")
    assert not (tmp_path / "fs" / "x").exists() or shutil.rmtree(tmp_path / "fs") is None


# -- git states a person reaches with ordinary commands ----------------------------------------

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Person",
    "GIT_AUTHOR_EMAIL": "person@example.com",
    "GIT_COMMITTER_NAME": "Person",
    "GIT_COMMITTER_EMAIL": "person@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=check,
        env={**os.environ, **GIT_ENV},
    )  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A workspace that is a git repository with two commits on ``main``, a daily log
    tracked, and the audit trail committing (the default)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root, _ = init_workspace(tmp_path / "ws", "en")
    (root / ".memdir" / "config.toml").write_text('[embedding]\nprovider = "none"\n')
    env = {"MEMDIR_HOME": str(tmp_path / "home"), "MEMDIR_NOW": "2026-11-30T09:00:00", **GIT_ENV}
    git(root, "init", "-q", "-b", "main")
    (root / "memory" / "2026-11-30.md").write_text("# 2026-11-30\n\n- first note\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "notes")
    (root / "memory" / "topic.md").write_text("# Topic\n\n- a topic note\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "topic")
    yield root, env


def facts_in(root: Path) -> str:
    return (root / "MEMORY.md").read_text() + (root / "memory" / "2026-11-30.md").read_text()


def test_facts_written_on_a_detached_head_survive_checking_out_the_branch(
    repo: tuple[Path, dict[str, str]],
) -> None:
    """On a detached HEAD memdir committed the facts there; ``git checkout main`` then took
    them out of the files (reflog only)."""
    root, env = repo
    git(root, "checkout", "-q", "--detach")
    for args in (("remember", "detached fact one"), ("remember", "--section", "facts",
                 "detached fact two")):  # fmt: skip
        done = memdir("-w", str(root), *args, env=env)
        assert done.returncode == 0, done.stderr
    status = memdir("-w", str(root), "status", env=env)
    assert "detached" in status.stdout
    assert git(root, "log", "--oneline", "-1").stdout.split()[1] == "topic"  # no commit
    checkout = git(root, "checkout", "-q", "main", check=False)
    assert checkout.returncode == 0, checkout.stderr  # the changes come along, uncommitted
    assert "detached fact one" in facts_in(root) and "detached fact two" in facts_in(root)
    TALLY["git states tried"] += 1


def test_a_fact_written_mid_rebase_is_put_back_after_rebase_abort(
    repo: tuple[Path, dict[str, str]],
) -> None:
    """Mid-rebase, a write, then ``git rebase --abort`` deleted the daily log's new line; now it
    is kept and put back at the next write."""
    root, env = repo
    git(root, "checkout", "-q", "-b", "side", "HEAD~1")
    (root / "memory" / "topic.md").write_text("# Topic\n\n- the side branch's topic note\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "side topic")
    rebase = git(root, "rebase", "main", check=False)
    assert rebase.returncode != 0 and (root / ".git" / "rebase-merge").exists()
    done = memdir("-w", str(root), "remember", "written during the rebase", env=env)
    assert done.returncode == 0, done.stderr
    assert "rebase is in progress" in done.stderr or "rebase" in done.stdout + done.stderr
    git(root, "rebase", "--abort")
    assert "written during the rebase" not in facts_in(root)  # git took it away
    done = memdir("-w", str(root), "remember", "a later fact", env=env)
    assert done.returncode == 0, done.stderr
    text = facts_in(root)
    assert "written during the rebase" in text and "a later fact" in text
    log = memdir("-w", str(root), "log", env=env).stdout
    assert "put back 1 line written while a rebase is in progress" in log
    TALLY["git states tried"] += 1


def test_no_commit_into_a_repository_of_another_user(repo: tuple[Path, dict[str, str]]) -> None:
    """A workspace under a ``.git`` owned by someone else (git says "dubious ownership"):
    memdir committed MEMORY.md there."""
    root, env = repo
    if os.geteuid() != 0:
        pytest.skip("changing a folder's owner needs root")
    head = git(root, "rev-parse", "HEAD").stdout
    for path in [root / ".git", *(root / ".git").rglob("*")]:
        os.lchown(path, 4242, 4242)
    done = memdir("-w", str(root), "remember", "--section", "facts", "not for their repo", env=env)
    assert done.returncode == 0, done.stderr
    assert "another user" in done.stderr
    for path in [root / ".git", *(root / ".git").rglob("*")]:
        os.lchown(path, 0, 0)
    assert git(root, "rev-parse", "HEAD").stdout == head
    assert "not for their repo" in facts_in(root)
    TALLY["git states tried"] += 1


@pytest.mark.parametrize("where", ["gitignore-fifo", "excludesfile-fifo", "excludesfile-zero"])
def test_ignore_rules_that_would_block_never_hang_a_write(
    repo: tuple[Path, dict[str, str]], tmp_path: Path, where: str
) -> None:
    """``memory/.gitignore`` a FIFO, or ``core.excludesFile`` naming a FIFO or ``/dev/zero``:
    every automatic write hung for ever (4.7 GB of memory in 40 s for /dev/zero)."""
    root, env = repo
    if where == "gitignore-fifo":
        os.mkfifo(root / "memory" / ".gitignore")
    elif where == "excludesfile-fifo":
        os.mkfifo(tmp_path / "ignore.fifo")
        git(root, "config", "core.excludesFile", str(tmp_path / "ignore.fifo"))
    else:
        git(root, "config", "core.excludesFile", "/dev/zero")
    done = memdir("-w", str(root), "remember", f"a fact beside {where}", env=env)
    assert done.returncode == 0, done.stderr
    assert "cannot be read safely" in done.stderr
    assert f"a fact beside {where}" in facts_in(root)
    TALLY["blocking ignore files tried"] += 1


# -- a full disk under the index -----------------------------------------------------------------


def test_a_full_disk_is_not_damage_and_the_index_is_kept(tmp_path: Path) -> None:
    """With 0 bytes free a healthy index.sqlite was moved aside as corrupt, the rotation
    deleted it three searches later with the embedding cache, and errors read "cannot rollback
    - no transaction is active"."""
    with tmpfs(tmp_path / "fs", "4m") as fs:
        root, _ = init_workspace(fs / "ws", "en")
        env = {"MEMDIR_HOME": str(fs / "home"), "MEMDIR_NOW": "2026-11-30T09:00:00"}
        config = '[embedding]\nprovider = "fake"\n[audit]\ngit = "off"\n'
        (root / ".memdir" / "config.toml").write_text(config, encoding="utf-8")
        for day in range(1, 21):
            note = f"- day {day}: the staging redis listens on port {6000 + day}\n" * 3
            (root / "memory" / f"2026-11-{day:02d}.md").write_text(f"# 2026-11-{day:02d}\n\n{note}")
        assert memdir("-w", str(root), "index", env=env).returncode == 0
        cached = json.loads(memdir("-w", str(root), "status", "--json", env=env).stdout)
        (root / "memory" / "2026-11-22.md").write_text("# 2026-11-22\n\n- changed while full\n")
        fill(fs, 0)
        for _ in range(4):
            done = memdir("-w", str(root), "search", "staging redis port", env=env)
            assert "cannot rollback" not in done.stderr
            assert "disk" in done.stderr and "is full" in done.stderr, done.stderr
            if done.returncode == 0:  # answered from the index as it is, with a warning
                assert "port" in done.stdout
                TALLY["full-disk searches answered"] += 1
            else:  # SQLite cannot even open its shared-memory file: said so, nothing moved
                assert "the index is kept as it is" in done.stderr
                TALLY["full-disk searches refused cleanly"] += 1
        refused = memdir("-w", str(root), "remember", "a fact on a full disk", env=env)
        assert refused.returncode != 0
        assert "full" in refused.stderr or "No space left" in refused.stderr
        assert "cannot rollback" not in refused.stderr
        assert not list((root / ".memdir").glob("index.sqlite.corrupt-*"))
        (fs / "filler.bin").unlink()
        after = json.loads(memdir("-w", str(root), "status", "--json", env=env).stdout)
        assert after["cached_embeddings"] >= cached["cached_embeddings"]
        again = memdir("-w", str(root), "search", "changed while full", env=env)
        assert again.returncode == 0 and "2026-11-22.md" in again.stdout, again.stderr
        TALLY["full-disk index runs"] += 1
