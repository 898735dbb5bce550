"""kill -9 at random points of indexing and writing, page-level corruption of the index, and
concurrent writers and searchers. Whatever happens: no acknowledged line is lost, no line is
torn, and the next command finds a working index (recovered when it has to be).

The fast variants run by default; the ``torture`` ones (``pytest -m torture``) push harder.
"""

from __future__ import annotations

import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memdir import FakeEmbedder, Memory
from tests.helpers import write
from tests.torture.conftest import TALLY, scale

DAY = "2026-11-30"
LINE_RE = re.compile(r"^- w(\d+)-(\d+) the (\w+) jumps over fence (\d+)$")

WRITER = r"""
import os, sys
os.environ["MEMDIR_NOW"] = "2026-11-30T09:00:00"
from memdir import FakeEmbedder, Memory
ws, wid, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with Memory(ws, embedder=FakeEmbedder()) as mem:
    for n in range(count):
        mem.write(f"w{wid}-{n} the fox jumps over fence {n}")
        print(n, flush=True)  # acknowledged: it must survive a kill from here on
"""

INDEXER = r"""
import sys
from memdir import FakeEmbedder, Memory
with Memory(sys.argv[1], embedder=FakeEmbedder()) as mem:
    while True:
        mem.sync(force=True)
        print("synced", flush=True)
"""


def _python(script: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )


def _log_lines(root: Path) -> list[str]:
    path = root / "memory" / f"{DAY}.md"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _check_log(root: Path, acknowledged: dict[int, int]) -> int:
    """Every bullet whole, every acknowledged write present exactly once; returns lines lost."""
    seen: dict[tuple[int, int], int] = {}
    for line in _log_lines(root):
        if not line.startswith("- "):
            continue
        match = LINE_RE.match(line)
        assert match, f"torn or foreign line: {line!r}"
        key = (int(match.group(1)), int(match.group(2)))
        seen[key] = seen.get(key, 0) + 1
    assert all(count == 1 for count in seen.values()), "a line was written twice"
    return sum(1 for wid, upto in acknowledged.items() for n in range(upto) if (wid, n) not in seen)


def _searchable(root: Path) -> None:
    with Memory(root, embedder=FakeEmbedder()) as mem:
        mem.search("fox jumps fence")
        assert mem.status()["identity_current"]


def _kill_writes(root: Path, rounds: int, rng: random.Random) -> None:
    acknowledged: dict[int, int] = {}
    for wid in range(rounds):
        proc = _python(WRITER, str(root), str(wid), "400")
        time.sleep(rng.uniform(1.0, 3.0))  # imports take ~1 s: kill anywhere after
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate()
        acknowledged[wid] = len(out.split())
        TALLY["kill -9 during writes"] += 1
    lost = _check_log(root, acknowledged)
    TALLY["acknowledged writes"] += sum(acknowledged.values())
    TALLY["acknowledged writes lost"] += lost
    assert lost == 0
    _searchable(root)


def _kill_indexing(root: Path, rounds: int, rng: random.Random) -> None:
    for n in range(40):
        write(
            root, f"memory/topic-{n}.md", f"# topic {n}\n" + f"the fox jumps over fence {n}\n" * 40
        )
    for _ in range(rounds):
        proc = _python(INDEXER, str(root))
        time.sleep(rng.uniform(1.0, 4.0))
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        TALLY["kill -9 during indexing"] += 1
        _searchable(root)


@pytest.mark.parametrize("seed", [1])
def test_kill_during_writes_and_indexing(tmp_path, seed) -> None:
    rng = random.Random(seed)
    root = _workspace(tmp_path)
    _kill_writes(root, 2, rng)
    _kill_indexing(root, 1, rng)


@pytest.mark.torture
@pytest.mark.parametrize("seed", [7, 8])
def test_kill_during_writes_and_indexing_long(tmp_path, seed, request) -> None:
    rng = random.Random(seed)
    root = _workspace(tmp_path)
    _kill_writes(root, scale(2, 8, request), rng)
    _kill_indexing(root, scale(1, 6, request), rng)


def _workspace(tmp_path: Path) -> Path:
    from memdir import init_workspace

    root, _ = init_workspace(tmp_path / "ws")
    return root


# -- page-level corruption ---------------------------------------------------------------------


def _corrupt(db: Path, rng: random.Random) -> int:
    """Overwrite 1–4 random pages (never page 1, the header: that case is covered elsewhere)."""
    pages = db.stat().st_size // 4096
    hit = rng.sample(range(1, pages), k=min(pages - 1, rng.randint(1, 4)))
    with db.open("r+b") as fh:
        for page in hit:
            fh.seek(page * 4096)
            fh.write(rng.randbytes(4096))
    return len(hit)


def _corruption_rounds(tmp_path: Path, rounds: int, rng: random.Random) -> None:
    root = _workspace(tmp_path)
    for n in range(30):
        write(root, f"memory/n{n}.md", f"# note {n}\n" + f"the fox jumps over fence {n}\n" * 50)
    db = root / ".memdir" / "index.sqlite"
    for _ in range(rounds):
        with Memory(root, embedder=FakeEmbedder()) as mem:
            mem.sync()
        sqlite3.connect(db).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
        TALLY["index pages overwritten"] += _corrupt(db, rng)
        with Memory(root, embedder=FakeEmbedder()) as mem:
            hits = mem.search("fox fence 17", min_score=0.0).results
            status = mem.status()
        assert hits and status["files"] >= 30
        TALLY["corrupted index files recovered"] += 1


def test_page_corruption_is_recovered(tmp_path) -> None:
    _corruption_rounds(tmp_path, 2, random.Random(3))


@pytest.mark.torture
def test_page_corruption_is_recovered_long(tmp_path, request) -> None:
    _corruption_rounds(tmp_path, scale(2, 25, request), random.Random(4))


# -- concurrent writers and searchers ----------------------------------------------------------


def _concurrent(tmp_path: Path, writers: int, per_writer: int, searchers: int) -> None:
    root = _workspace(tmp_path)
    procs = [_python(WRITER, str(root), str(w), str(per_writer)) for w in range(writers)]
    stop = threading.Event()
    errors: list[BaseException] = []
    searches = 0

    def search() -> None:
        nonlocal searches
        with Memory(root, embedder=FakeEmbedder()) as mem:
            while not stop.is_set():
                try:
                    mem.search("fox jumps fence")
                    searches += 1
                except BaseException as exc:
                    errors.append(exc)
                    return

    threads = [threading.Thread(target=search) for _ in range(searchers)]
    for thread in threads:
        thread.start()
    outs = [proc.communicate(timeout=600)[0] for proc in procs]
    stop.set()
    for thread in threads:
        thread.join()
    assert not errors, errors
    acknowledged = {w: len(out.split()) for w, out in enumerate(outs)}
    assert all(count == per_writer for count in acknowledged.values())
    lost = _check_log(root, acknowledged)
    TALLY["concurrent writes"] += sum(acknowledged.values())
    TALLY["concurrent writes lost"] += lost
    TALLY["searches during writes"] += searches
    assert lost == 0


def test_concurrent_writers_and_searchers(tmp_path) -> None:
    _concurrent(tmp_path, writers=2, per_writer=25, searchers=1)


@pytest.mark.torture
def test_concurrent_writers_and_searchers_long(tmp_path) -> None:
    _concurrent(tmp_path, writers=4, per_writer=250, searchers=2)


# -- rebuilds published while other processes open the index -----------------------------------

READER = r"""
import os, sys, time
from pathlib import Path
from memdir import FakeEmbedder, Memory
deadline, n = time.monotonic() + float(sys.argv[2]), 0
note = Path(sys.argv[1], "memory", f"reader-{os.getpid()}.md")
while time.monotonic() < deadline:
    with Memory(sys.argv[1], embedder=FakeEmbedder()) as mem:  # kept open across a rebuild
        for _ in range(3):
            n += 1
            note.write_text(f"the fox jumps fence, edit {n}\n")  # the search syncs it
            mem.search("fox jumps fence")
            conn = mem.index.store().conn
            conn.execute("BEGIN")  # counters and rows from one snapshot
            files = mem.index.store().counter("files")
            rows = conn.execute("SELECT count(*) FROM files").fetchone()[0]
            conn.execute("COMMIT")
            print("ok" if files == rows else f"counted {files} files for {rows} rows", flush=True)
"""

REBUILDER = r"""
import sys
from pathlib import Path
from memdir import FakeEmbedder, Memory
note = Path(sys.argv[1], "memory", "rebuilder.md")
with Memory(sys.argv[1], embedder=FakeEmbedder()) as mem:
    for n in range(10**6):
        mem.sync(force=True)
        note.write_text(f"the fox jumps fence, rebuilt {n}\n")
        mem.sync()  # and a write into the live index between rebuilds
        print("synced", flush=True)
"""


def _rebuilds_under_readers(root: Path, seconds: float, readers: int) -> None:
    """Forced rebuilds in one process while others keep editing, syncing and opening the
    index: every reader sees a whole index, its counters in step with its rows. (A rebuild
    once renamed its file over the live one, and CI once counted every file twice in
    ``test_concurrent_writers_and_searchers``; this test did not catch that race on the old
    code in 2 runs, so it guards the invariant rather than reproducing the bug.)"""
    for n in range(30):
        write(root, f"memory/topic-{n}.md", f"# topic {n}\n" + f"the fox jumps fence {n}\n" * 20)
    _searchable(root)
    indexer = _python(REBUILDER, str(root))
    procs = [_python(READER, str(root), str(seconds)) for _ in range(readers)]
    outs = [proc.communicate(timeout=600)[0].split("\n") for proc in procs]
    indexer.send_signal(signal.SIGKILL)
    rebuilds = len(indexer.communicate()[0].split())
    seen = [line for out in outs for line in out if line]
    TALLY["rebuilds published under readers"] += rebuilds
    TALLY["reader checks during rebuilds"] += len(seen)
    assert seen and all(line == "ok" for line in seen), [x for x in seen if x != "ok"][:3]
    with Memory(root, embedder=FakeEmbedder()) as mem:
        mem.sync()
        conn = mem.index.store().conn
        assert mem.status()["files"] == conn.execute("SELECT count(*) FROM files").fetchone()[0]
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"


def test_rebuilds_under_readers(tmp_path) -> None:
    _rebuilds_under_readers(_workspace(tmp_path), seconds=4.0, readers=2)


@pytest.mark.torture
def test_rebuilds_under_readers_long(tmp_path) -> None:
    _rebuilds_under_readers(_workspace(tmp_path), seconds=40.0, readers=3)
