"""Issue 35, the listeners and the service, re-run at length (``pytest -m torture``):

1. ``memdir ui`` through the service, started and ended again and again (Ctrl-C and kill -9):
   every inspector needs its link, every one stops with its ``memdir ui``, nothing is left
   behind (threads, inspectors);
2. ``memdir daemon token --rotate`` again and again while the service runs: each new token
   works at once, each old one is refused, and the thin client keeps being served.

(500 workspaces in a row: ``tests/service/test_pool_bound.py``.)
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memdir import Memory, init_workspace
from tests.service.conftest import Service, start_service
from tests.service.test_inspector import closed, inspectors, start_ui_client, wait_until
from tests.service.test_other_user import INSPECTOR_PROBES
from tests.torture.conftest import TALLY

pytestmark = pytest.mark.torture


@pytest.fixture
def served(isolated_env: Path, tmp_path: Path) -> Iterator[tuple[Service, Path]]:
    """A running service and an indexed workspace (as tests/service/conftest.py makes them)."""
    (isolated_env / "config.toml").write_text('[embedding]\nprovider = "fake"\n')
    root, _ = init_workspace(tmp_path / "notes", "en")
    (root / "MEMORY.md").write_text(
        "# Memory\n\n## Facts\n- Production database: PostgreSQL 15 on db-prod-01:5432\n",
        encoding="utf-8",
    )
    with Memory(root) as memory:
        memory.sync()
    running = start_service(isolated_env)
    try:
        yield running, root
    finally:
        running.process.terminate()
        try:
            running.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            running.process.kill()


def _threads(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    return int(next(line for line in status.splitlines() if line.startswith("Threads:"))[8:])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="counts threads in /proc")
def test_inspectors_come_and_go_with_memdir_ui(served: tuple[Service, Path]) -> None:
    service, notes = served
    baseline = 0
    for cycle in range(12):
        mode = ("--writable",) if cycle % 3 == 0 else ()
        process, url = start_ui_client(service, notes, "--port", "0", *mode)
        base = url.split("?", 1)[0]
        for method, path in INSPECTOR_PROBES:
            answer = httpx.request(method, base.rstrip("/") + path, timeout=60)
            assert answer.status_code == 401, (method, path, answer.status_code)
            assert "db-prod-01" not in answer.text
            TALLY["inspector requests without the session, refused"] += 1
        with httpx.Client(timeout=60, follow_redirects=True) as http:
            assert http.get(url).status_code == 200  # signed in
            found = http.get(base + "api/search", params={"q": "production database"}).json()
            assert found["results"][0]["path"] == "MEMORY.md"
        if cycle % 2:
            process.kill()
        else:
            process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
        wait_until(lambda base=base: closed(base))
        assert inspectors(service) == []
        TALLY["inspectors held by memdir ui and stopped with it"] += 1
        if cycle == 1:
            baseline = _threads(service.process.pid)
    assert _threads(service.process.pid) <= baseline + 3  # nothing piles up


def test_the_service_follows_every_rotation(served: tuple[Service, Path]) -> None:
    service, notes = served
    url = f"http://127.0.0.1:{service.port}/v1/health"
    old = service.token
    for _ in range(10):
        rotated = service.memdir("daemon", "token", "--rotate")
        assert rotated.returncode == 0, rotated.stderr
        new = rotated.stdout.decode().strip()
        assert httpx.get(url, headers={"Authorization": f"Bearer {old}"}).status_code == 401
        assert httpx.get(url, headers={"Authorization": f"Bearer {new}"}).status_code == 200
        served = service.memdir("-w", str(notes), "search", "production database")
        assert served.returncode == 0 and b"db-prod-01" in served.stdout
        status = service.memdir("daemon", "status")
        assert f"127.0.0.1:{service.port}".encode() in status.stdout
        old = new
        TALLY["token rotations followed by the running service"] += 1
