"""Three hosts of one team memory (issue 37): three clones of one bare repository, three
memdir homes, one PostgreSQL index. Each host writes 100 facts while the others write and
syncs now and then; one host is killed with SIGKILL during a sync and started again. Then two
syncs each, and: every host's files hold all 300 facts once, no conflict marker, each automatic
write once in ``git log``; every probe of a host's own search found the fact it probed; every
host's search finds every fact, and ``memory_get`` of the hit returns its text."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from memdir import Memory
from tests.index.conftest import drop_workspaces
from tests.index.conftest import pg_url as pg_url  # the fixture
from tests.team.conftest import MARKERS, Host, make_team, run_git
from tests.team.host_worker import fact, token

FACTS = 100
NAMES = ("a", "b", "c")
REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.torture, pytest.mark.postgres]
#: What the run tried and found (printed at its end; docs/reliability.md quotes it).
TALLY: Counter[str] = Counter()


def _start(host: Host, first: int, out: Path, home: Path) -> subprocess.Popen[bytes]:
    # This process's path: the worker runs the memdir under test, wherever it was imported from.
    path = os.pathsep.join([str(REPO_ROOT), *sys.path])
    env = {**os.environ, "MEMDIR_HOME": str(home), "PYTHONPATH": path}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.team.host_worker",
            str(host.root),
            host.name,
            *map(str, (first, FACTS, out)),
        ],
        env=env,
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=open(out / f"{host.name}.err", "ab"),
    )


def _acked(out: Path, name: str) -> list[str]:
    path = out / f"{name}.acked"
    return path.read_text("utf-8").split() if path.exists() else []


def test_three_hosts_one_killed_during_a_sync_lose_nothing(
    team_env: None,
    tmp_path: Path,
    pg_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workspace_id = f"team37-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("MEMDIR_INDEX_URL", pg_url)
    _, hosts = make_team(tmp_path, NAMES)
    out = tmp_path / "out"
    out.mkdir()
    homes = {}
    for host in hosts:
        home = tmp_path / f"home-{host.name}"
        home.mkdir()
        (home / "config.toml").write_text(
            # Keyword search: the fake embedder's vectors rank near-identical notes by chance,
            # and what is tested here is that every copy's rows stay findable.
            f'[index]\nworkspace_id = "{workspace_id}"\n[embedding]\nprovider = "none"\n',
            encoding="utf-8",
        )
        homes[host.name] = home
    try:
        procs = {h.name: _start(h, 0, out, homes[h.name]) for h in hosts}
        victim, kills, rng = hosts[1], 0, random.Random(37)
        deadline = time.monotonic() + 900
        while any(p.poll() is None for p in procs.values()):
            assert time.monotonic() < deadline, "the hosts did not finish in 15 minutes"
            state = (
                (out / f"{victim.name}.state").read_text("utf-8")
                if (out / f"{victim.name}.state").exists()
                else ""
            )
            if kills < 2 and state == "syncing" and procs[victim.name].poll() is None:
                time.sleep(rng.uniform(0.0, 0.4))
                procs[victim.name].send_signal(signal.SIGKILL)
                procs[victim.name].wait()
                kills += 1
                resume = len(_acked(out, victim.name))
                procs[victim.name] = _start(victim, resume, out, homes[victim.name])
            time.sleep(0.01)
        for name, proc in procs.items():
            err = (out / f"{name}.err").read_text("utf-8", "replace")[-2000:]
            assert proc.returncode == 0, f"host {name} failed: {err}"
        assert kills >= 1
        # Two syncs each, in turn.
        for _ in range(2):
            for host in hosts:
                monkeypatch.setenv("MEMDIR_HOME", str(homes[host.name]))
                with Memory(host.root) as mem:
                    mem.team_sync()
        _check(hosts, out, homes, monkeypatch)
        TALLY["facts written"] += FACTS * len(hosts)
        TALLY["kill -9 during a sync"] += kills
        print("\nTEAM HOSTS " + ", ".join(f"{k}: {v}" for k, v in sorted(TALLY.items())))
    finally:
        if not os.environ.get("H37_KEEP"):
            drop_workspaces(pg_url, {workspace_id})


def _check(
    hosts: list[Host], out: Path, homes: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    every = [token(h.name, n) for h in hosts for n in range(FACTS)]
    for host in hosts:
        assert sorted(_acked(out, host.name)) == sorted(token(host.name, n) for n in range(FACTS))
        probes = (out / f"{host.name}.probes").read_text("utf-8").splitlines()
        misses = [p for p in probes if p.startswith("miss")]
        TALLY["own-search probes"] += len(probes)
        TALLY["probe misses"] += len(misses)
        assert not misses, misses
        texts = "".join(p.read_text("utf-8") for p in sorted((host.root / "memory").glob("*.md")))
        lost = [t for t in every if texts.count(t) != 1]
        TALLY["facts lost or doubled"] += len(lost)
        assert not lost, (host.name, lost[:10])
        assert not any(m in texts for m in MARKERS)
        assert host.git("status", "--porcelain") == ""
        ids = [
            line.split(":", 1)[1].strip()
            for line in host.git("log", "--format=%B").splitlines()
            if line.startswith("Memdir-Id:")
        ]
        assert len(ids) == len(set(ids)) == FACTS * len(hosts)  # each automatic write once
        run_git(host.root, "fsck", "--no-progress")
    total = sum(len((out / f"{h.name}.probes").read_text().splitlines()) for h in hosts)
    assert total >= 100
    # After the syncs every host's search finds every fact, and memory_get reads it back.
    for host in hosts:
        monkeypatch.setenv("MEMDIR_HOME", str(homes[host.name]))
        with Memory(host.root) as mem:
            for word in every:  # asked in the fact's own words, as the probes are
                asked = fact(word[2:-4], int(word[-4:-1]))
                hits = [r for r in mem.search(asked).results if word in r.snippet]
                assert hits, (host.name, word)
                hit = hits[0]
                got = mem.get(
                    hit.path,
                    from_line=hit.start_line,
                    lines=hit.end_line - hit.start_line + 1,
                    copy=hit.copy or None,
                )
                assert word in got.text, (host.name, word, hit.citation, hit.copy)
    TALLY["searches after sync"] += len(every) * len(hosts)
