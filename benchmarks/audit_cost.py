"""What the audit trail adds to one automatic write.

    PYTHONPATH=src python benchmarks/audit_cost.py              # 200 writes per mode
    PYTHONPATH=src python benchmarks/audit_cost.py --quick      # smoke run (20 writes)

Modes, each in a fresh workspace, writes alternating between the daily log (a locked append)
and a MEMORY.md section (an atomic replace), every fact distinct:

- ``unaudited``: the write primitives alone (``Workspace.append_file`` / ``replace_file``: a
  locked append / an atomic replace) of the same
  text ``write_memory`` would write), as memdir wrote before the audit trail;
- ``log``: ``write_memory`` with the JSONL trail (no git repository);
- ``git``: ``write_memory`` in a git repository holding the workspace (a commit per write);
- ``git-big``: the same in a repository that already has ``--files`` other files and
  ``--commits`` commits of the person's.

No ``git`` binary is used (dulwich builds every object). The report gives p50/p90 per write in
ms, with the machine, the load and the command.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from dulwich.repo import Repo

from memdir.lifecycle.write import write_memory
from memdir.workspace.layout import Workspace
from memdir.workspace.templates import init_workspace

NOW = dt.datetime(2026, 12, 1, 9, 30)


def fact(i: int) -> str:
    return f"fact {i} code {i * 2654435761 % 16**12:012x} owner team{i % 7}"


def seed_repo(root: Path, files: int, commits: int) -> None:
    """A repository with ``files`` small files and ``commits`` commits, made with dulwich."""
    repo = Repo.init(str(root), mkdir=True)
    for n in range(commits):
        new = []
        for k in range(n * files // commits, (n + 1) * files // commits):
            path = root / "src" / f"d{k % 20}" / f"f{k}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"file {k}\n", encoding="utf-8")
            new.append(path.relative_to(root).as_posix())
        repo.get_worktree().stage(new)
        repo.get_worktree().commit(
            message=f"person commit {n}".encode(),
            committer=b"Pat <pat@example.org>",
            author=b"Pat <pat@example.org>",
        )
    repo.close()


def time_writes(write: Callable[[int], None], count: int) -> list[float]:
    out = []
    for i in range(count):
        start = time.perf_counter()
        write(i)
        out.append((time.perf_counter() - start) * 1000)
    return out


def mode_unaudited(root: Path, count: int) -> list[float]:
    ws = Workspace(root)
    daily = f"memory/{NOW.date().isoformat()}.md"

    def write(i: int) -> None:
        if i % 2:
            text = ws.read_file("MEMORY.md").decode("utf-8")
            ws.replace_file("MEMORY.md", text + f"- {fact(i)}\n")
        else:
            ws.append_file(daily, f"- {fact(i)}\n")

    return time_writes(write, count)


def mode_write_memory(root: Path, count: int) -> list[float]:
    ws = Workspace(root)

    def write(i: int) -> None:
        section = "facts" if i % 2 else None
        target = "memory" if section else "daily"
        result = write_memory(ws, fact(i), target=target, section=section, now=NOW)
        assert result.written, result.reason

    return time_writes(write, count)


def summary(name: str, ms: list[float]) -> str:
    ms = sorted(ms)
    p90 = ms[int(len(ms) * 0.9) - 1]
    return f"| {name} | {len(ms)} | {statistics.median(ms):.1f} | {p90:.1f} |"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", "--writes", type=int, default=200)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.writes, args.files, args.commits = 20, 100, 10
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        root, _ = init_workspace(base / "plain")
        rows.append(
            summary("unaudited (append_file / replace_file)", mode_unaudited(root, args.writes))
        )
        root, _ = init_workspace(base / "log")
        rows.append(
            summary("audited, no git (.memdir/audit.jsonl)", mode_write_memory(root, args.writes))
        )
        Repo.init(str(base / "git"), mkdir=True).close()
        root, _ = init_workspace(base / "git")
        rows.append(
            summary("audited, git (commit per write)", mode_write_memory(root, args.writes))
        )
        big = base / "big"
        seed_repo(big, args.files, args.commits)
        root, _ = init_workspace(big / "notes")
        rows.append(
            summary(
                f"audited, git, repo of {args.files} files / {args.commits} commits",
                mode_write_memory(root, args.writes),
            )
        )
    print(f"# audit cost per write ({dt.date.today()})\n")
    command = shlex.join(["benchmarks/audit_cost.py", *(argv or sys.argv[1:])])
    print(f"command: `PYTHONPATH=src python {command}`")
    machine = f"{platform.platform()}, {os.cpu_count()} cores"
    print(f"machine: {machine}, Python {platform.python_version()}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print("| mode | writes | p50 ms | p90 ms |\n| --- | --- | --- | --- |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
