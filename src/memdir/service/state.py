"""The service's files under ``$MEMDIR_HOME/service/``: who runs, where, with which token.

- ``service.json``: ``{"port", "pid", "version", "started"}`` of the running service, written
  once it listens and removed when it stops (a stale one, its pid gone, is ignored);
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
import os
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path

from memdir.config import memdir_home
from memdir.errors import MemdirError
from memdir.fileio import atomic_write
from memdir.service.protocol import SERVICE_DIR, STATE_FILE, TOKEN_FILE, read_endpoint

LOCK_FILE = "service.lock"
LOG_FILE = "service.log"
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
    """``$MEMDIR_HOME/service``, made private (0700) if it has to be made."""
    path = (home or memdir_home()) / SERVICE_DIR
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
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
        fd = os.open(path.with_suffix(".tmp"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(value + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(path.with_suffix(".tmp"), path)
    except OSError as exc:
        raise MemdirError(f"cannot write the service token {path}: {exc.strerror}") from exc
    return value


def _read_token(path: Path) -> str:
    info = path.stat()
    if info.st_mode & 0o077:
        raise MemdirError(
            f"{path} can be read by other users (mode {info.st_mode & 0o777:o}): "
            f"chmod 600 {path}, or make a new one with `memdir daemon token --rotate`"
        )
    value = path.read_text(encoding="ascii").strip()
    if len(value) < 32:
        raise MemdirError(f"{path} does not hold a token: `memdir daemon token --rotate`")
    return value


def endpoint(home: Path | None = None) -> tuple[int, str] | None:
    """The port and token a client would use (as :func:`memdir.service.protocol.read_endpoint`)."""
    return read_endpoint(str(home) if home is not None else None)
