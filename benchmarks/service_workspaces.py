"""What the per-user service holds after being asked for many workspaces in a row (issue 35):
its threads, open files and inotify instances, read from ``/proc`` (Linux only).

    python benchmarks/service_workspaces.py                 # 500 workspaces, fake embedder
    python benchmarks/service_workspaces.py --workspaces 150 --every 25

A private ``MEMDIR_HOME`` with the fake embedder, a service (``memdir daemon run``) for it, and
``--workspaces`` small workspaces (``memdir init`` plus one note). Each is asked for once, in a
row, by Claude Code's HTTP session-start hook (``POST /v1/hooks/claude-code/session-start
?workspace=ABS``), which opens it in the service. Every ``--every`` workspaces, and at the end,
the service's thread count (``/proc/PID/status``), its open file descriptors
(``/proc/PID/fd``), how many of those are inotify instances (``anon_inode:inotify``) and how
many workspaces it says it keeps open (``/v1/health``) are printed as a Markdown table, with the
load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import _service as svc
from _common import log, md_table


def counts(pid: int) -> tuple[int, int, int]:
    """Threads, open file descriptors and inotify instances of process ``pid``."""
    status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    threads = int(next(line for line in status.splitlines() if line.startswith("Threads:"))[8:])
    fds = inotify = 0
    for entry in os.scandir(f"/proc/{pid}/fd"):
        fds += 1
        try:
            if os.readlink(entry.path) == "anon_inode:inotify":
                inotify += 1
        except OSError:
            continue  # closed meanwhile
    return threads, fds, inotify


def make_workspaces(root: Path, count: int) -> list[Path]:
    from memdir import init_workspace

    made = []
    for n in range(count):
        path, _ = init_workspace(root / f"ws{n:04d}", "en")
        (path / "memory" / "note.md").write_text(f"# Note {n}\n\n- fact number {n}\n")
        made.append(path)
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workspaces", type=int, default=500)
    parser.add_argument("--every", type=int, default=50, help="measure every N workspaces")
    args = parser.parse_args()
    if not Path("/proc/self/fd").is_dir():
        sys.exit("needs Linux's /proc")
    with tempfile.TemporaryDirectory(prefix="memdir-bench-ws-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        (home / "config.toml").write_text('[embedding]\nprovider = "fake"\n')
        env = svc.client_env({**os.environ, "MEMDIR_HOME": str(home)})
        os.environ["MEMDIR_HOME"] = str(home)
        log(f"making {args.workspaces} workspaces")
        workspaces = make_workspaces(Path(tmp), args.workspaces)
        load_before = svc.load()
        rows: list[list[str]] = []
        with svc.running_service(env) as service:
            hook = json.dumps({"hook_event_name": "SessionStart", "session_id": "b"}).encode()
            started = time.monotonic()
            conn = service.connection()
            for n, workspace in enumerate(workspaces, 1):
                path = f"/v1/hooks/claude-code/session-start?workspace={workspace}"
                status, body = service.request("POST", path, hook, conn)
                if status != 200:
                    sys.exit(f"{workspace}: HTTP {status}: {body[:300]!r}")
                if n % args.every == 0 or n == len(workspaces):
                    threads, fds, inotify = counts(service.pid)
                    served = len(service.health()["served"])  # type: ignore[arg-type]
                    rows.append([str(v) for v in (n, served, threads, fds, inotify)])
                    log(f"{n}: {served} open, {threads} threads, {fds} fds, {inotify} inotify")
            seconds = time.monotonic() - started
        print(f"# The service asked for {args.workspaces} workspaces in a row\n")
        print(f"{seconds:.1f} s in all; load average {load_before} before, {svc.load()} after.\n")
        header = ["asked for", "open", "threads", "open files", "inotify instances"]
        print(md_table(header, rows))


if __name__ == "__main__":
    main()
