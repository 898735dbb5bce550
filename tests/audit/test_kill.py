"""Torture: kill -9 a writer in the middle of audited writes, again and again.

After each kill the next audited write (here ``history``) recovers, and then: no git lock file
is left, the working files equal HEAD (no half commit, nothing memdir wrote is left out), every
write the writer reported done is in HEAD, and no record is stored twice. The figures are
printed (``pytest -s``) for docs/governance.md.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from memdir.audit.trail import read_trail
from memdir.workspace.layout import Workspace
from tests.audit.conftest import GitRunner
from tests.audit.writer_proc import fact

WRITER = Path(__file__).with_name("writer_proc.py")
#: More rounds for the published figures: MEMDIR_TORTURE_ROUNDS=40 pytest -s <this file>
ROUNDS = int(os.environ.get("MEMDIR_TORTURE_ROUNDS", "8"))
TODAY = "memory/2026-12-01.md"


def _run_and_kill(root: Path, name: str, rng: random.Random) -> list[int]:
    proc = subprocess.Popen(
        [sys.executable, str(WRITER), str(root), name, "100000"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    done = [int(proc.stdout.readline().split()[0])]  # it is writing: now kill it at random
    time.sleep(rng.uniform(0.0, 0.4))
    proc.kill()  # SIGKILL
    rest, _ = proc.communicate(timeout=30)
    done.extend(int(line.split()[0]) for line in rest.splitlines() if line.strip())
    assert proc.returncode == -9
    return done


def test_kill_9_leaves_no_half_commit_and_loses_no_line(repo: Path, git: GitRunner) -> None:
    rng = random.Random(18)
    root = repo / "ws"
    ws = Workspace(root)
    finished = 0
    recovered = 0
    started = time.monotonic()
    for n in range(ROUNDS):
        name = f"k{n}"
        done = _run_and_kill(root, name, rng)
        finished += len(done)
        pending = list((root / ".memdir" / "audit" / "pending").glob("*.json"))
        recovered += len(pending)
        records = read_trail(ws)  # recovers under the write lock
        locks = list((repo / ".git").rglob("*.lock"))
        assert locks == [], f"round {n}: git lock files left: {locks}"
        assert git(repo, "status", "--porcelain") == "", f"round {n}: working tree != HEAD"
        committed = git(repo, "show", f"HEAD:ws/{TODAY}") + git(repo, "show", "HEAD:ws/MEMORY.md")
        missing = [i for i in done if f"- {fact(name, i)}" not in committed]
        assert missing == [], f"round {n}: finished writes not committed: {missing}"
        ids = Counter(r.id for r in records)
        assert max(ids.values()) == 1, f"round {n}: a record stored twice"
        assert all(r.commit for r in records)
    git(repo, "fsck", "--no-dangling")
    committed = git(repo, "show", f"HEAD:ws/{TODAY}") + git(repo, "show", "HEAD:ws/MEMORY.md")
    lines = committed.count("\n- k")
    print(
        f"\nkill -9 torture: {ROUNDS} kills, {finished} finished writes, {lines} lines committed, "
        f"{recovered} interrupted operation(s) recovered, {time.monotonic() - started:.1f} s"
    )
