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
