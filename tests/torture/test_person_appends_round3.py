"""Issue 35, defect 3: a person's ``echo >> MEMORY.md`` while memdir writes a section.

memdir rewrote MEMORY.md by renaming a new file over it; a line the person appended between
memdir's read and its rename went to the old file and was gone (26 of 300 lines through HTTP
MCP, 3 of 200 through the CLI, on 9657cf2). Here a real shell appends 300 numbered lines, one
every 10 ms, while memdir adds facts to a MEMORY.md section through the CLI (a process of its
own per fact, two side by side), the per-user service (the thin client) and the service's HTTP
MCP route (``memory_write``), 10 runs each. Every line of the person's and every fact memdir
acknowledged must be in the file at the end. A last case keeps daily-log appends honest the
same way.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from memdir import init_workspace
from tests.service.conftest import Service, start_service
from tests.torture.conftest import TALLY, scale

pytestmark = pytest.mark.torture

#: Lines the person appends per run, and the pause between two (seconds).
PERSON_LINES = 300
PERSON_PAUSE = "0.01"
#: Runs per way in (``pytest -m torture``; 2 in the default suite).
RUNS = 10
DAY = "2026-12-05"

_PERSON = (
    'i=1; while [ "$i" -le {n} ]; do echo "{line}" >> {file}; sleep {pause}; i=$((i + 1)); done'
)
_LINE = "- person line $i of run {run}: the quick brown fox jumps over the lazy dog"

#: One write of a fact; raises when memdir did not acknowledge it.
Writer = Callable[[Path, str], None]


@dataclass
class Run:
    person_bytes_lost: int
    facts_acknowledged: int
    facts_lost: int


def person_line(i: int, run: int) -> str:
    return _LINE.replace("$i", str(i)).format(run=run)


def _workspace(folder: Path) -> Path:
    root, _ = init_workspace(folder, "en")
    (root / ".memdir" / "config.toml").write_text('[embedding]\nprovider = "none"\n')
    return root


def _run(root: Path, run: int, writers: list[Writer], file: str = "MEMORY.md") -> Run:
    """One run: a shell appends :data:`PERSON_LINES` lines to ``file`` while each writer adds
    facts, one after another, until the shell is done."""
    script = _PERSON.format(
        n=PERSON_LINES, line=_LINE.format(run=run), file=file, pause=PERSON_PAUSE
    )
    (root / file).parent.mkdir(parents=True, exist_ok=True)
    person = subprocess.Popen(["sh", "-c", script], cwd=root)
    acknowledged: list[str] = []
    failures: list[BaseException] = []
    counter = itertools.count(1)

    def loop(write: Writer) -> None:
        try:
            while person.poll() is None:
                fact = f"memdir fact {next(counter)} of run {run} (p35)"
                write(root, fact)
                acknowledged.append(fact)
        except BaseException as exc:  # reported in the test's thread
            failures.append(exc)

    threads = [threading.Thread(target=loop, args=(w,)) for w in writers]
    for thread in threads:
        thread.start()
    assert person.wait(timeout=120) == 0
    for thread in threads:
        thread.join(timeout=300)
    if failures:
        raise failures[0]
    folders = [f for f in (root, root / ".memdir" / "tmp") if f.exists()]
    leftovers = [p.name for f in folders for p in f.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []  # every temp file of a swap, tried or not, is gone
    lines = set((root / file).read_text(encoding="utf-8").splitlines())
    lost = [
        person_line(i, run) for i in range(1, PERSON_LINES + 1) if person_line(i, run) not in lines
    ]
    return Run(
        sum(len(x.encode()) + 1 for x in lost),
        len(acknowledged),
        sum(f"- {f}" not in lines for f in acknowledged),
    )


def _check(way: str, runs: list[Run]) -> None:
    TALLY[f"person lines appended ({way})"] += PERSON_LINES * len(runs)
    TALLY[f"memdir writes acknowledged ({way})"] += sum(r.facts_acknowledged for r in runs)
    TALLY[f"person bytes lost ({way})"] += sum(r.person_bytes_lost for r in runs)
    TALLY[f"facts lost ({way})"] += sum(r.facts_lost for r in runs)
    print(f"\n{way}: " + ", ".join(f"{r.person_bytes_lost}/{r.facts_acknowledged}" for r in runs))
    assert [r.person_bytes_lost for r in runs] == [0] * len(runs)
    assert sum(r.facts_lost for r in runs) == 0
    assert all(r.facts_acknowledged for r in runs)


def _cli(env: dict[str, str], *where: str) -> Writer:
    def write(root: Path, fact: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "memdir", "-w", str(root), "remember", *where, fact],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr

    return write


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('[embedding]\nprovider = "none"\n')
    running = start_service(home)
    try:
        yield running
    finally:
        running.process.terminate()
        try:
            running.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            running.process.kill()


def test_cli_section_writes_keep_every_appended_line(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    env = {**os.environ, "MEMDIR_HOME": str(tmp_path / "home"), "MEMDIR_SERVICE": "off"}
    write = _cli(env, "-s", "facts")
    runs = [
        _run(_workspace(tmp_path / f"ws{run}"), run, [write, write])
        for run in range(scale(2, RUNS, request))
    ]
    _check("CLI", runs)


def test_service_section_writes_keep_every_appended_line(
    tmp_path: Path, service: Service, request: pytest.FixtureRequest
) -> None:
    write = _cli(service.env(), "-s", "facts")
    runs = []
    for run in range(scale(2, RUNS, request)):
        root = _workspace(tmp_path / f"ws{run}")
        runs.append(_run(root, run, [write]))
        assert str(root) in {s.get("workspace") for s in service.served()}  # served warm
    _check("service", runs)


def test_http_mcp_section_writes_keep_every_appended_line(
    tmp_path: Path, service: Service, request: pytest.FixtureRequest
) -> None:
    headers = {
        "Authorization": f"Bearer {service.token}",
        "Accept": "application/json, text/event-stream",
    }
    ids = itertools.count(1)
    with httpx.Client(headers=headers, timeout=60) as http:

        def write(root: Path, fact: str) -> None:
            call = {
                "jsonrpc": "2.0",
                "id": next(ids),
                "method": "tools/call",
                "params": {"name": "memory_write", "arguments": {"text": fact, "section": "facts"}},
            }
            url = f"http://127.0.0.1:{service.port}/mcp?workspace={root}"
            answer = http.post(url, json=call)
            assert answer.status_code == 200, answer.text
            result = answer.json()["result"]
            assert not result.get("isError"), result
            assert json.loads(result["content"][0]["text"])["written"], result

        runs = [
            _run(_workspace(tmp_path / f"ws{run}"), run, [write])
            for run in range(scale(2, RUNS, request))
        ]
    _check("HTTP MCP", runs)


def test_daily_log_appends_keep_every_appended_line(
    tmp_path: Path, service: Service, request: pytest.FixtureRequest
) -> None:
    """Locked appends were never lost; they stay so (the person appends to today's log)."""
    write = _cli({**service.env(), "MEMDIR_NOW": f"{DAY}T09:00:00"})
    runs = [
        _run(_workspace(tmp_path / f"ws{run}"), run, [write], f"memory/{DAY}.md")
        for run in range(scale(1, 3, request))
    ]
    _check("daily log, service", runs)
