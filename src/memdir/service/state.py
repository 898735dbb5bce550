"""The service's files under ``$MEMDIR_HOME/service/``: who runs, where, with which token.

- ``service.json``: ``{"port", "pid", "version", "started", "socket"}`` of the running service,
  written once it listens and removed when it stops (a stale one, its pid gone, is ignored);
- ``token``: the per-user secret every request must carry (``Authorization: Bearer …``), mode
  0600, made once and kept (Claude Code's settings name it), new with ``memdir daemon token
  --rotate``;
- ``service.lock``: held while a service runs, so there is one per ``MEMDIR_HOME``;
- ``service.log``: what a service started in the background says.

The thin client (:mod:`memdir.client`) reads the first two without this module (it imports
almost nothing); the names are shared.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import stat
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from memdir.config.settings import memdir_home
from memdir.errors import MemdirError
from memdir.service.protocol import SERVICE_DIR, STATE_FILE, TOKEN_FILE, read_endpoint
from memdir.workspace.fileio import atomic_write

log = logging.getLogger("memdir.service")

LOCK_FILE = "service.lock"
LOG_FILE = "service.log"
#: Made by an autostart; a minute old, it no longer holds the next one back.
AUTOSTART_FILE = "autostart"
#: The port the service listens on unless ``[service] port`` says otherwise (the inspector's
#: is 8765).
DEFAULT_PORT = 8766


@dataclass(frozen=True)
class ServiceState:
    """What ``service.json`` says about the running service."""

    port: int
    pid: int
    version: str
    started: str
    #: Its Unix socket (:mod:`memdir.service.unix_socket`); "" from a service before issue 35.
    socket: str = ""

    def alive(self) -> bool:
        """Whether its process still exists (it may be another user's reused pid: the token
        check on the first request tells)."""
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        try:  # a process that ended but was not yet reaped by its parent is gone too
            stat = Path(f"/proc/{self.pid}/stat").read_text(encoding="ascii", errors="replace")
        except OSError:
            return True
        return stat.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def folder(home: Path | None = None) -> Path:
    """``$MEMDIR_HOME/service``, made private (0700) if it has to be made, and kept so."""
    path = (home or memdir_home()) / SERVICE_DIR
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(OSError):
        if path.stat().st_mode & 0o077:
            path.chmod(0o700)
    return path


def read_state(home: Path | None = None) -> ServiceState | None:
    """The running service's state; None when there is none or its process is gone."""
    path = (home or memdir_home()) / SERVICE_DIR / STATE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        state = ServiceState(
            port=int(data["port"]),
            pid=int(data["pid"]),
            version=str(data["version"]),
            started=str(data["started"]),
            socket=str(data.get("socket", "")),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return state if state.alive() else None


def write_state(state: ServiceState, home: Path | None = None) -> None:
    atomic_write(folder(home) / STATE_FILE, json.dumps(asdict(state)) + "\n")


def clear_state(pid: int, home: Path | None = None) -> None:
    """Remove ``service.json`` if it is still the one ``pid`` wrote."""
    path = (home or memdir_home()) / SERVICE_DIR / STATE_FILE
    with contextlib.suppress(OSError, ValueError):
        if json.loads(path.read_text(encoding="utf-8")).get("pid") == pid:
            path.unlink()


def token(home: Path | None = None, *, rotate: bool = False) -> str:
    """The per-user token (made on first use, mode 0600).

    Raises:
        MemdirError: it cannot be read or written, or someone else can read it.
    """
    path = folder(home) / TOKEN_FILE
    if not rotate:
        with contextlib.suppress(FileNotFoundError):
            return _read_token(path)
    value = secrets.token_urlsafe(32)
    try:
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".token-")  # mode 0600, O_EXCL
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(value + "\n")
            f.flush()
            os.fsync(f.fileno())
        if rotate:
            os.replace(temp, path)
        else:
            with contextlib.suppress(FileExistsError):  # a concurrent first use won: its token
                os.link(temp, path)  # made only if none is there
            os.unlink(temp)
    except OSError as exc:
        raise MemdirError(f"cannot write the service token {path}: {exc.strerror}") from exc
    return _read_token(path)


class TokenFile:
    """The token as its file holds it now, for the running service: read again whenever the
    file changes (``memdir daemon token --rotate`` while the service runs), so the new token
    works at once and the old one stops working (docs/design.md#the-per-user-service).

    A token file that is gone or refused (others can read it, not a regular file) lets no
    request in until it is put right; the refusal is logged once per change.
    """

    def __init__(self, home: Path | None = None) -> None:
        self.path = folder(home) / TOKEN_FILE
        self._seen: tuple[int, int, int, int] | None = None
        self._value = ""

    def current(self) -> str:
        """The token now ("" when there is none that can be used: nothing matches it)."""
        try:
            info = os.lstat(self.path)
        except OSError:
            seen = None
        else:
            seen = (info.st_ino, info.st_mtime_ns, info.st_size, info.st_mode)
        if seen is None or seen != self._seen:
            try:
                self._value = _read_token(self.path)
            except (OSError, MemdirError) as exc:
                if self._value or self._seen != seen:
                    log.warning("memdir service: no usable token, every request refused: %s", exc)
                self._value = ""
            self._seen = seen
        return self._value


def _read_token(path: Path) -> str:
    info = path.lstat()
    if not stat.S_ISREG(info.st_mode):
        raise MemdirError(f"{path} is not a regular file: remove it, then run memdir again")
    if info.st_mode & 0o077:
        raise MemdirError(
            f"{path} can be read by other users (mode {info.st_mode & 0o777:o}): "
            f"chmod 600 {path}, or make a new one with `memdir daemon token --rotate`"
        )
    value = path.read_text(encoding="ascii").strip()
    if len(value) < 32:
        raise MemdirError(f"{path} does not hold a token: `memdir daemon token --rotate`")
    return value


def endpoint(home: Path | None = None) -> tuple[str, str] | None:
    """The socket and token a client would use (:func:`memdir.service.protocol.read_endpoint`)."""
    return read_endpoint(str(home) if home is not None else None)


def service_running(home: Path | None = None) -> bool:
    """Whether a service holds ``service.lock`` (a process that only has the pid written in a
    stale ``service.json`` does not)."""
    lock = FileLock(str(folder(home) / LOCK_FILE))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return True
    lock.release()
    return False


def runs_memdir_service(pid: int) -> bool:
    """Whether process ``pid`` runs ``memdir daemon run`` (where ``/proc`` tells; elsewhere
    assumed, the lock having said a service runs)."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except FileNotFoundError:
        return not Path("/proc/self").exists()
    except OSError:
        return False
    return b"daemon" in command and b"run" in command
