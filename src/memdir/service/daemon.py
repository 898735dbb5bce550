"""Running the service: in the foreground (``memdir daemon run``, what a systemd or launchd unit
starts), in the background on demand (:func:`start`), and stopping it.

One service per ``$MEMDIR_HOME``: :func:`run` holds ``service.lock`` while it runs, binds
127.0.0.1 on the home's port (:mod:`memdir.service.ports`) before it says where it is
(``service.json``), and removes that file when it stops, however it stops (a crash leaves a file
whose pid is gone, which clients ignore; the next start replaces it). A start that fails says
why at once (:func:`start` reads what the new process wrote before it ended).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock, Timeout

from memdir import __version__
from memdir.config.settings import load_config, memdir_home
from memdir.errors import MemdirError
from memdir.service import state as files
from memdir.service import unix_socket
from memdir.service.protocol import post

log = logging.getLogger("memdir.service")
#: Seconds :func:`start` waits for a new service to answer.
START_TIMEOUT_S = 20.0


def run(
    *, port: int | None = None, idle_minutes: float | None = None, exit_when_idle: bool = False
) -> None:
    """Serve until stopped (``POST /v1/shutdown``, SIGTERM, Ctrl-C, or idle with
    ``exit_when_idle``).

    Raises:
        MemdirError: another service runs for this ``MEMDIR_HOME``, or the port is taken.
    """
    from memdir.service.ports import bind_service_port

    logging.getLogger("mcp").setLevel(logging.WARNING)  # a line per stateless request
    settings = load_config().service
    home = memdir_home()
    folder = files.folder(home)
    lock = FileLock(str(folder / files.LOCK_FILE))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        running = files.read_state(home)
        where = f" (pid {running.pid}, port {running.port})" if running else ""
        raise MemdirError(f"a memdir service already runs for {home}{where}") from None
    try:
        files.token(home)  # made now if there is none; requests check the file as it is then
        if port is None:
            sock = bind_service_port(folder, settings.port)
        else:
            sock = bind_service_port(folder, port, exact=True)
        bound = sock.getsockname()[1]
        local = unix_socket.bind(home)
        # Listening from here: a request waits in the sockets' backlog while the app loads (the
        # web stack and the search stack take a second or more), so `memdir daemon start`
        # returns as soon as this file says where the service is.
        started = datetime.now(UTC).isoformat(timespec="seconds")
        running = files.ServiceState(bound, os.getpid(), __version__, started, str(local.path))
        files.write_state(running, home)
        try:
            _serve(
                sock,
                local.sock,
                home,
                bound,
                idle_minutes or settings.idle_minutes,
                settings.max_workspaces,
                exit_when_idle,
            )
        finally:
            files.clear_state(os.getpid(), home)
            local.remove()
    finally:
        lock.release()


def _serve(
    sock: socket.socket,
    local: socket.socket,
    home: Path,
    bound: int,
    idle_minutes: float,
    max_open: int,
    exit_when_idle: bool,
) -> None:
    import uvicorn

    from memdir.service.app import create_app
    from memdir.service.pool import Pool

    pool = Pool(idle_s=60.0 * idle_minutes, max_open=max_open)
    token = files.TokenFile(home)
    app = create_app(pool, token=token.current, port=lambda: bound, exit_when_idle=exit_when_idle)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
    server = _server_class()(config)
    app.state["stop"] = lambda: setattr(server, "should_exit", True)
    app.state["stopping"] = lambda: bool(server.should_exit)  # SIGTERM sets it too
    log.warning(
        "memdir service %s listening on 127.0.0.1:%s (pid %s)", __version__, bound, os.getpid()
    )
    server.run(sockets=[sock, local])


def main() -> None:
    """What :func:`start` runs in the background: :func:`run` with ``memdir daemon run``'s
    logging, an error as one line on stderr (which :func:`start` reports) and exit 1."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        run(exit_when_idle="--exit-when-idle" in sys.argv[1:])
    except MemdirError as exc:
        sys.stderr.write(f"memdir: error: {exc}\n")
        sys.exit(1)


def _server_class() -> type:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, except that SIGTERM and SIGINT only ask it to stop: uvicorn
        raises the signal again once it stopped, which would end the process before
        ``service.json`` is removed."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            stops = (signal.SIGINT, signal.SIGTERM)
            previous = {sig: signal.signal(sig, self.handle_exit) for sig in stops}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    return Server


def health(home: Path | None = None, *, timeout: float = 2.0) -> dict[str, object] | None:
    """What the running service says about itself; None when none answers."""
    where = files.endpoint(home)
    if where is None:
        return None
    sock, token = where
    try:
        status, body = post(sock, token, "/v1/health", b"", timeout=timeout, method="GET")
        data = json.loads(body) if status == 200 else None
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def start(*, wait: float = START_TIMEOUT_S, exit_when_idle: bool = False) -> dict[str, object]:
    """Start a service in the background unless one answers; what it says about itself (a new
    one: its version and pid once it listens, before its app has loaded).

    Raises:
        MemdirError: it did not start within ``wait`` seconds, or it ended first (with the
            reason it gave).
    """
    found = health()
    if found is not None:
        return found
    log_path = files.folder() / files.LOG_FILE
    if files.service_running():
        # A service that holds the lock is starting, or runs and does not answer: a second one
        # would only find the lock taken, so wait for the first.
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            time.sleep(0.1)
            found = health()
            if found is not None:
                return found
        running = files.read_state()
        who = f" (pid {running.pid})" if running else ""
        raise MemdirError(
            f"a memdir service runs{who} but did not answer within {wait:.0f} s: see "
            f"{log_path}; `memdir daemon stop`, then start it again"
        )
    start_at = log_path.stat().st_size if log_path.exists() else 0
    child = _spawn(exit_when_idle=exit_when_idle)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        time.sleep(0.05)
        running = files.read_state()
        if running is not None and running.pid == child.pid:
            return {"version": running.version, "pid": running.pid}
        if child.poll() is not None:  # it ended: say why now, not after the wait
            found = health()  # (another start may have won the lock meanwhile)
            if found is not None:
                return found
            raise MemdirError(f"the memdir service did not start: {_why(log_path, start_at)}")
    raise MemdirError(f"the memdir service did not start within {wait:.0f} s: see {log_path}")


def _why(log_path: Path, start_at: int) -> str:
    """The last line the failed start wrote to the log (the error the command printed)."""
    try:
        with open(log_path, "rb") as log_file:
            log_file.seek(start_at)
            lines = log_file.read().decode("utf-8", "replace").strip().splitlines()
    except OSError:
        lines = []
    for line in reversed(lines):
        if line.strip():
            return line.strip().removeprefix("memdir: error: ") + f" (log: {log_path})"
    return f"it ended without a word: see {log_path}"


def _spawn(*, exit_when_idle: bool) -> subprocess.Popen[bytes]:
    """``memdir daemon run`` in the background, logging to ``service.log``."""
    home = memdir_home().absolute()  # the child runs in the service folder
    folder = files.folder(home)
    # Not `memdir daemon run`: the command line's imports would come before the bind.
    command = [sys.executable, "-c", "from memdir.service.daemon import main; main()"]
    if exit_when_idle:
        command.append("--exit-when-idle")
    log_path = folder / files.LOG_FILE
    with open(log_path, "ab") as log_file:
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=log_file,
            start_new_session=True,
            close_fds=True,
            cwd=str(folder),
            env={**os.environ, "MEMDIR_HOME": str(home)},
        )


#: Seconds after an autostart during which no other is tried (many hooks at once start one).
AUTOSTART_QUIET_S = 60.0


def start_quietly() -> None:
    """Start a service in the background that stops when idle, and return at once (a Claude
    Code hook that ran without one: the next hooks are answered warm). At most one try a
    minute, and none while a service holds its lock. Never raises."""
    with contextlib.suppress(Exception):
        if not load_config().service.autostart or files.service_running():
            return
        marker = files.folder() / files.AUTOSTART_FILE
        with contextlib.suppress(FileNotFoundError):
            if time.time() - marker.stat().st_mtime < AUTOSTART_QUIET_S:
                return
            marker.unlink()
        os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))  # one wins
        _spawn(exit_when_idle=True)


def stop(*, wait: float = 15.0) -> int | None:
    """Stop the running service; its pid, or None when none ran (a ``service.json`` whose
    process does not hold the service's lock is stale: nothing is signalled).

    Raises:
        MemdirError: it did not stop within ``wait`` seconds.
    """
    running = files.read_state()
    if running is None or not files.service_running():
        return None
    where = files.endpoint()
    try:
        if where is None or post(where[0], where[1], "/v1/shutdown", b"", timeout=5.0)[0] != 200:
            raise OSError("no answer")
    except OSError:
        if files.runs_memdir_service(running.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(running.pid, signal.SIGTERM)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if not running.alive():
            return running.pid
        time.sleep(0.1)
    raise MemdirError(f"the memdir service (pid {running.pid}) did not stop in {wait:.0f} s")
