"""Where the service's Unix socket lives, and binding it: always in a folder only its user can
create and enter (docs/design.md#the-per-user-service).

A socket's address holds at most 107 bytes, so a long ``MEMDIR_HOME`` cannot keep it in
``$MEMDIR_HOME/service/``. A fixed name in the shared temporary folder (``/tmp/memdir-<uid>``)
can be made first by another user, who then keeps the service from starting (issue 35). The
folders are tried in this order, each checked (a folder, not a symlink, owned by this user,
mode 0700; its socket name free or a stale socket of ours), and the first that passes is used:

1. ``$MEMDIR_HOME/service/`` (``service.sock``), when the path fits;
2. ``$XDG_RUNTIME_DIR/memdir/``, when that variable names a folder of this user's that others
   cannot write (systemd makes it per user, mode 0700);
3. ``<tmp>/memdir-<uid>/`` (``tempfile.gettempdir()``, so ``TMPDIR`` counts);
4. a new folder made for this service alone (``tempfile.mkdtemp``, mode 0700, a random name no
   one can take first), removed when the service stops.

The names in shared folders are a hash of the service folder (several ``MEMDIR_HOME`` of one
user can share them). The socket chosen is written in ``service.json`` (``"socket"``), which
the thin client reads.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import socket
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memdir.errors import MemdirError
from memdir.service.protocol import SOCKET_FILE, service_dir

log = logging.getLogger("memdir.service")

#: The longest socket path used (``sun_path`` holds 108 bytes with its NUL; macOS 104).
MAX_SOCKET_PATH = 100


@dataclass
class Listener:
    """A bound, listening Unix socket and what to remove when the service stops."""

    sock: socket.socket
    path: Path
    #: The folder made for this service alone (removed with the socket), if it is one.
    own_folder: Path | None = None

    def remove(self) -> None:
        """Remove the socket file (and the service's own folder); the socket stays open."""
        with contextlib.suppress(OSError):
            if self.path.is_socket():
                self.path.unlink()
        if self.own_folder is not None:
            with contextlib.suppress(OSError):
                self.own_folder.rmdir()


def candidates(home: Path | None = None) -> Iterator[Path]:
    """The socket paths to try, best first (see the module's docstring), without the last
    resort of a new folder."""
    folder = service_dir(str(home) if home is not None else None)
    preferred = Path(folder) / SOCKET_FILE
    if _fits(preferred):
        yield preferred
    name = hashlib.sha256(os.path.abspath(folder).encode("utf-8", "surrogateescape"))
    file_name = name.hexdigest()[:16] + ".sock"
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime) and _ours_and_closed(Path(runtime)):
        yield Path(runtime) / "memdir" / file_name
    yield Path(tempfile.gettempdir()) / f"memdir-{os.getuid()}" / file_name


def bind(home: Path | None = None) -> Listener:
    """The service's socket, bound and listening (mode 0600), in the first private folder that
    can hold it.

    Raises:
        MemdirError: no folder could hold it, or binding failed.
    """
    for path in candidates(home):
        if not _fits(path):
            continue
        why = _usable(path)
        if not why:
            try:
                return Listener(_bind(path), path)
            except MemdirError as exc:
                why = str(exc)
        log.warning("memdir service: not listening at %s: %s", path, why)
    try:
        folder = Path(tempfile.mkdtemp(prefix=f"memdir-{os.getuid()}-"))  # 0700, a random name
    except OSError as exc:
        raise MemdirError(f"cannot make a private folder for the service's socket: {exc}") from exc
    path = folder / SOCKET_FILE
    if not _fits(path):
        folder.rmdir()
        raise MemdirError(f"the temporary folder's path is too long for a socket: {path}")
    return Listener(_bind(path), path, own_folder=folder)


def _fits(path: Path) -> bool:
    return len(os.fsencode(path)) <= MAX_SOCKET_PATH


def _ours_and_closed(folder: Path) -> bool:
    """A folder (not a link) of this user's that no one else can write in."""
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


def _usable(path: Path) -> str:
    """Why ``path`` cannot hold the socket ("" when it can): its folder is made private if it
    has to be made, and must be this user's, private and not a link; a file in the way must
    be a stale socket of this user's (it is removed)."""
    folder = path.parent
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        return f"cannot make {folder}: {exc.strerror or exc}"
    try:
        info = os.lstat(folder)
    except OSError as exc:
        return f"{folder}: {exc.strerror or exc}"
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        return f"{folder} is not a folder (a link, or another kind of file)"
    if info.st_uid != os.getuid():
        return f"{folder} belongs to another user (uid {info.st_uid})"
    if info.st_mode & 0o077:
        try:
            os.chmod(folder, 0o700, follow_symlinks=False)
        except OSError as exc:
            return f"{folder} is open to others and cannot be made private: {exc.strerror}"
    try:
        old = os.lstat(path)
    except FileNotFoundError:
        return ""
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    if not stat.S_ISSOCK(old.st_mode) or old.st_uid != os.getuid():
        return f"{path} is in the way (not a socket of this user's)"
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a stale socket of ours: one service per home holds the lock
    return ""


def _bind(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
        os.chmod(path, 0o600)
        sock.listen(64)
    except OSError as exc:
        sock.close()
        raise MemdirError(f"cannot listen on {path}: {exc.strerror or exc}") from exc
    sock.set_inheritable(True)
    return sock
