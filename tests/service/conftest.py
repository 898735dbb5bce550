"""A real per-user service for the tests: ``memdir daemon run --port 0`` in its own process, on
a private ``MEMDIR_HOME`` with the fake embedder, stopped after the test."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memdir import Memory, init_workspace
from memdir.service import daemon
from memdir.service import state as files


@dataclass
class Service:
    home: Path
    process: subprocess.Popen[bytes]
    port: int
    token: str

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a client of this service."""
        env = {k: v for k, v in os.environ.items() if k != "MEMDIR_SERVICE"}
        env.update(MEMDIR_HOME=str(self.home), **extra)
        return env

    def memdir(
        self, *args: str, stdin: bytes = b"", **extra: str
    ) -> subprocess.CompletedProcess[bytes]:
        """``memdir ARGS`` through the executable's entry (the thin client)."""
        return subprocess.run(
            [sys.executable, "-m", "memdir", *args],
            input=stdin,
            capture_output=True,
            env=self.env(**extra),
            timeout=120,
        )

    def served(self) -> list[dict[str, str]]:
        found = daemon.health(self.home)
        assert found is not None
        served = found["served"]
        assert isinstance(served, list)
        return served


def start_service(home: Path, *extra: str, port: int = 0, **variables: str) -> Service:
    """``memdir daemon run`` on ``home`` (``port`` 0: any free one), with ``variables`` added
    to its environment."""
    env = {k: v for k, v in os.environ.items() if k != "MEMDIR_SERVICE"}
    env.update(MEMDIR_HOME=str(home), **variables)
    process = subprocess.Popen(
        [sys.executable, "-m", "memdir", "daemon", "run", "--port", str(port), *extra],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=open(home / "service-test.log", "ab"),  # noqa: SIM115 (closed with the process)
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError((home / "service-test.log").read_text())
        if daemon.health(home) is not None:
            running = files.read_state(home)
            assert running is not None
            return Service(home, process, running.port, files.token(home))
        time.sleep(0.05)
    process.kill()
    raise AssertionError("the service did not start: " + (home / "service-test.log").read_text())


@pytest.fixture
def service(isolated_env: Path) -> Iterator[Service]:
    (isolated_env / "config.toml").write_text('[embedding]\nprovider = "fake"\n')
    running = start_service(isolated_env)
    try:
        yield running
    finally:
        running.process.terminate()
        try:
            running.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            running.process.kill()


@pytest.fixture
def notes(tmp_path: Path, isolated_env: Path) -> Path:
    """A workspace with a few facts (English and Chinese), indexed (so that a command's output
    does not depend on how far a first sync got when it ran)."""
    (isolated_env / "config.toml").write_text('[embedding]\nprovider = "fake"\n')
    root, _ = init_workspace(tmp_path / "notes", "en")
    (root / "MEMORY.md").write_text(
        "# Memory\n\n## Facts\n- Production database: PostgreSQL 15 on db-prod-01:5432\n"
        "- 支付服务 payment-service 的端口是 9090\n",
        encoding="utf-8",
    )
    with Memory(root) as memory:
        memory.sync()
    return root
