"""Two writer processes and a person committing at the same time: no commit and no line lost."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from memdir.audit.trail import read_trail
from memdir.workspace.layout import Workspace
from tests.audit.conftest import GitRunner
from tests.audit.writer_proc import fact

WRITER = Path(__file__).with_name("writer_proc.py")
WRITES = 30
TODAY = "memory/2026-12-01.md"


def test_two_writers_and_a_person_lose_nothing(repo: Path, git: GitRunner) -> None:
    root = repo / "ws"
    procs = [
        subprocess.Popen(
            [sys.executable, str(WRITER), str(root), name, str(WRITES)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in ("alpha", "beta")
    ]
    person_commits = 0
    lock_clashes = 0  # git refuses to run while another git holds index.lock: memdir too
    failures: list[str] = []
    stop = threading.Event()

    def person() -> None:  # the person commits their own file while memdir writes
        nonlocal person_commits, lock_clashes
        appended = -1
        # A line appended but not committed yet (its commit met memdir's lock) is committed
        # before the person stops, or the working tree would not be clean at the end.
        while (not stop.is_set() and person_commits < 15) or appended == person_commits:
            if appended < person_commits:
                with (repo / "notes.txt").open("a", encoding="utf-8") as fh:
                    fh.write(f"person line {person_commits}\n")
                appended = person_commits
            done = subprocess.run(
                ["git", "commit", "-q", "-m", f"person {person_commits}", "--", "notes.txt"],
                cwd=repo,
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode == 0:
                person_commits += 1
            elif ".lock" in done.stderr or "cannot lock ref" in done.stderr:
                lock_clashes += 1  # git's own compare-and-swap saw memdir's commit: retry
            else:
                failures.append(done.stderr)
                return
            stop.wait(0.05)

    thread = threading.Thread(target=person)
    thread.start()
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    stop.set()
    thread.join()
    assert [p.returncode for p in procs] == [0, 0]
    assert failures == []
    assert all(len(out.splitlines()) == WRITES for out in outputs)

    records = read_trail(Workspace(root))
    assert len(records) == 2 * WRITES  # one commit per write, none lost, none twice
    assert len({r.id for r in records}) == 2 * WRITES
    subjects = git(repo, "log", "--format=%s").splitlines()
    assert sum(s.startswith("person ") for s in subjects) == person_commits > 0
    committed = git(repo, "show", f"HEAD:ws/{TODAY}") + git(repo, "show", "HEAD:ws/MEMORY.md")
    for name in ("alpha", "beta"):
        assert all(f"- {fact(name, i)}" in committed for i in range(WRITES))
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "show", "HEAD:notes.txt").count("person line") == person_commits
    print(f"\n{person_commits} person commits, {lock_clashes} retried on a git lock")
