"""The per-user service for the benchmarks (issue 29): start one for a private ``MEMDIR_HOME``,
talk to it as a warm client would, stop it.

- :func:`memdir_command`: the installed ``memdir`` executable beside this Python (the thin
  client, :mod:`memdir.client`), else ``python -m memdir``;
- :func:`running_service`: ``memdir daemon run --port N`` (N a port free a moment before:
  ``--port 0`` took ``[service] port`` up to 1a06864) in the background with a given
  environment (the one the clients will send, so the service does not decline their commands),
  waited for, and stopped with ``memdir daemon stop`` (then SIGTERM / SIGKILL of the very
  process it started) however the block ends;
- :func:`client_env` / :func:`cold_env`: an environment with the fast path on (``MEMDIR_SERVICE``
  unset: the tests set it to ``off``) or off.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path


def memdir_command() -> list[str]:
    """How a person or a hook runs memdir here: the console script beside this Python."""
    script = Path(sys.executable).parent / "memdir"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "memdir"]


def script_python() -> str:
    """The interpreter the ``memdir`` script starts (its shebang), else this one."""
    command = memdir_command()
    if len(command) == 1:
        with contextlib.suppress(OSError), open(command[0], "rb") as fh:
            first = fh.readline().decode("utf-8", "replace").strip()
            if first.startswith("#!"):
                return first[2:].split()[0]
    return sys.executable


def client_env(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` with the per-user service's fast path on."""
    env = dict(base)
    env.pop("MEMDIR_SERVICE", None)
    return env


def cold_env(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` with every command in its own process (no service, none started)."""
    return {**base, "MEMDIR_SERVICE": "off"}


@dataclass
class Service:
    port: int
    token: str
    pid: int
    home: Path

    def health(self) -> dict[str, object]:
        status, body = self.request("GET", "/v1/health", b"")
        if status != 200:
            raise RuntimeError(f"health: HTTP {status}: {body[:200]!r}")
        return json.loads(body)  # type: ignore[no-any-return]

    def request(
        self,
        method: str,
        path: str,
        body: bytes,
        conn: http.client.HTTPConnection | None = None,
        content_type: str = "application/json",
    ) -> tuple[int, bytes]:
        """One request over ``conn`` (kept open) or a new connection (closed after). A kept
        connection the service closed while idle (uvicorn's keep-alive is 5 s; a client such as
        Claude Code reconnects) is opened again once."""
        own = conn is None
        if conn is None:
            conn = self.connection()
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": content_type}
        try:
            for attempt in (1, 2):
                try:
                    conn.request(method, path, body=body, headers=headers)
                    response = conn.getresponse()
                    return response.status, response.read()
                except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
                    if own or attempt == 2:
                        raise
                    conn.close()
                    _connect(conn)
            raise AssertionError("unreachable")
        finally:
            if own:
                conn.close()

    def connection(self) -> http.client.HTTPConnection:
        """A kept-alive connection with Nagle's algorithm off: http.client sends a request's
        headers and body in two writes, and with Nagle on the body waited for the service's
        delayed ACK, 40 ms a request (a memory_get took 44 ms, 2.9 ms sent in one write)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        _connect(conn)
        return conn


def _connect(conn: http.client.HTTPConnection) -> None:
    conn.connect()
    assert conn.sock is not None
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


@contextlib.contextmanager
def running_service(env: Mapping[str, str], *, wait: float = 60.0) -> Iterator[Service]:
    """``memdir daemon run --port N`` for ``env["MEMDIR_HOME"]``, stopped at the end."""
    home = Path(env["MEMDIR_HOME"])
    state = home / "service" / "service.json"
    state.unlink(missing_ok=True)
    (home / "service").mkdir(parents=True, exist_ok=True)
    log_path = home / "service" / "bench-service.log"
    with open(log_path, "ab") as log_file:
        proc = subprocess.Popen(
            [*memdir_command(), "daemon", "run", "--port", str(free_port())],
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=log_file,
            cwd=str(home),
        )
    try:
        deadline = time.monotonic() + wait
        service = None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"the service exited {proc.returncode}: see {log_path}")
            with contextlib.suppress(OSError, ValueError):
                data = json.loads(state.read_text(encoding="utf-8"))
                token = (home / "service" / "token").read_text(encoding="ascii").strip()
                service = Service(int(data["port"]), token, int(data["pid"]), home)
                service.health()
                break
            service = None
            time.sleep(0.1)
        if service is None:
            raise RuntimeError(f"the service did not answer within {wait:.0f} s: see {log_path}")
        yield service
    finally:
        subprocess.run(
            [*memdir_command(), "daemon", "stop"], env=dict(env), capture_output=True, check=False
        )
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def free_port() -> int:
    """A loopback port nothing listens on (now)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wall(command: list[str], env: Mapping[str, str], **kwargs: object) -> tuple[float, str]:
    """Seconds one command takes to run to its end, and its stdout; raises on failure."""
    started = time.perf_counter()
    done = subprocess.run(
        command, env=dict(env), capture_output=True, text=True, check=False, **kwargs
    )  # type: ignore[call-overload]
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{command[-3:]} exited {done.returncode}: {done.stderr[-2000:]}")
    return seconds, str(done.stdout)


def median_p90(values: list[float]) -> tuple[float, float]:
    """The median and the 90th percentile (linear interpolation)."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * 0.9
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    p90 = ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return median, p90


def load() -> str:
    """The 1-, 5- and 15-minute load averages, as ``a / b / c``."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())
