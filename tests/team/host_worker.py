"""One host of the three-host torture run (tests/torture/test_team_hosts.py), as a process of
its own with its own ``MEMDIR_HOME``:

    python -m tests.team.host_worker ROOT NAME FIRST LAST OUT

writes facts FIRST..LAST-1 through ``Memory.write`` (each one acknowledged by a line in
``OUT/<name>.acked`` once the call returns), probes its own search for a random fact it
acknowledged after every few writes (``OUT/<name>.probes``: ``hit``/``miss`` and the token), and
runs ``team sync`` every :data:`SYNC_EVERY` writes, saying so in ``OUT/<name>.state`` first
(the harness kills a host with SIGKILL while that file says ``syncing``).
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

from memdir import Memory

SYNC_EVERY = 17
PROBE_EVERY = 3


def token(name: str, n: int) -> str:
    """The one word that finds fact ``n`` of host ``name``."""
    return f"zq{name}{n:03d}x"


WORDS = (
    "kafka",
    "redis",
    "helm",
    "staging",
    "backup",
    "bucket",
    "pager",
    "rotation",
    "release",
    "window",
    "deploy",
    "freeze",
    "cluster",
    "region",
    "latency",
    "budget",
    "invoice",
    "vendor",
    "contract",
    "laptop",
    "badge",
    "office",
    "parking",
    "lunch",
    "meeting",
    "standup",
    "retro",
    "roadmap",
    "sprint",
    "ticket",
    "incident",
    "alert",
    "dashboard",
    "grafana",
    "prometheus",
    "postgres",
    "vacuum",
    "index",
    "shard",
    "replica",
    "failover",
    "cache",
    "proxy",
    "gateway",
    "token",
    "secret",
    "vault",
    "certificate",
    "domain",
    "mailbox",
    "calendar",
    "holiday",
    "travel",
    "visa",
    "hotel",
    "flight",
    "train",
)


def fact(name: str, n: int) -> str:
    """Fact ``n`` of host ``name``: its own few words (as distinct as notes are) and its
    token."""
    rng = random.Random(f"{name}:{n}")
    return f"{token(name, n)}: " + " ".join(rng.sample(WORDS, 6))


def _append(path: Path, line: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def _state(out: Path, name: str, what: str) -> None:
    (out / f"{name}.state").write_text(what, encoding="utf-8")


def main(argv: list[str]) -> int:
    root, name, first, last, out = Path(argv[0]), argv[1], int(argv[2]), int(argv[3]), Path(argv[4])
    rng = random.Random(f"{name}{first}")
    acked = out / f"{name}.acked"
    probes = out / f"{name}.probes"
    with Memory(root) as mem:  # the home's config: keyword search, the shared index
        known = acked.read_text("utf-8").split() if acked.exists() else []
        for n in range(first, last):
            _state(out, name, "writing")
            text = (root / "memory").glob("*.md")
            if not any(token(name, n) in p.read_text("utf-8") for p in text):
                mem.write(fact(name, n))  # a kill never lands here (only during a sync)
            _append(acked, token(name, n))
            known.append(token(name, n))
            if n % PROBE_EVERY == 0:
                probe = rng.choice(known)  # a fact asked for in its own words
                asked = fact(probe[2:-4], int(probe[-4:-1]))
                found = any(probe in r.snippet for r in mem.search(asked).results)
                _append(probes, f"{'hit' if found else 'miss'} {probe}")
            if n % SYNC_EVERY == SYNC_EVERY - 1:
                _state(out, name, "syncing")
                mem.team_sync()
                _state(out, name, "writing")
    _state(out, name, "done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
