"""The only ways memdir touches the bytes of a workspace file.

- :func:`read_regular_file` opens with ``O_NOFOLLOW | O_NONBLOCK`` and checks the open file
  is a regular file, so a symlink is refused and a FIFO, socket or device is never read (a FIFO
  would block the caller forever).
- :func:`atomic_write`: temp file + fsync + rename, so a crash leaves the old file or the new
  one, never a torn one. It refuses to replace a symlink or a special file.
- :func:`locked_append`: the text appended on an ``O_APPEND | O_NOFOLLOW`` descriptor under an
  exclusive cross-process lock, whole or not at all (:func:`append_whole`).
- :func:`append_whole`: every byte written and fsynced, or the file cut back to its old length
  and an error; a short write (a nearly full disk) is never reported as done.
- Neither changes a file a person made read-only (:func:`refuse_read_only`), and a write that
  a read-only file system or a permission forbids is a :class:`~memdir.errors.ReadOnly` error
  naming what cannot be written, not an ``OSError``.

Which paths may be read or written at all is decided by :class:`memdir.workspace.layout.Workspace`;
these functions only make sure the file they touch is the regular file that was checked.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import stat
import tempfile
import time
from pathlib import Path

from filelock import FileLock, Timeout

from memdir.errors import PathNotAllowed, ReadOnly, WorkspaceError

#: Temp files of killed writes older than this are removed at start-up (seconds). A write
#: takes milliseconds; an hour leaves any live writer alone.
STALE_TEMP_S = 3600.0
#: The names :func:`atomic_write` gives its temp files (``.<name>.<random>.tmp``).
TEMP_NAME_RE = re.compile(r"^\.(?P<name>.+)\.[A-Za-z0-9_]{8}\.tmp$")

#: The errors of a write that a read-only file system or a permission forbids.
READ_ONLY_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def describe_mode(mode: int) -> str:
    """What a file is, in words: ``a FIFO``, ``a socket``, ``a device``, ``a folder``…"""
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "not a regular file"


def read_regular_file(path: Path | str, *, limit: int | None = None) -> bytes:
    """The bytes of ``path`` (at most ``limit``), which must be a regular file, not a symlink.

    Raises:
        FileNotFoundError: nothing is there.
        PathNotAllowed: a symlink, a folder, a FIFO, a socket or a device.
        OSError: it cannot be read.
    """
    fd = _open_regular(path, os.O_RDONLY)
    try:
        chunks: list[bytes] = []
        total = 0
        while limit is None or total < limit:  # to EOF: the file may have grown since fstat
            chunk = os.read(fd, 1 << 20 if limit is None else min(1 << 20, limit - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def open_regular(path: Path | str, flags: int = os.O_RDONLY) -> int:
    """A descriptor on the regular file ``path`` (see :func:`read_regular_file`), for a reader
    that goes through it line by line.

    Raises:
        FileNotFoundError: nothing is there.
        PathNotAllowed: a symlink, a folder, a FIFO, a socket or a device.
        OSError: it cannot be opened.
    """
    return _open_regular(path, flags)


def _open_regular(path: Path | str, flags: int) -> int:
    """A descriptor on ``path`` opened with ``flags``, never through a final symlink and never
    blocking (a FIFO would); closed again unless the file is a regular file.

    Raises:
        PathNotAllowed: a symlink, a folder, a FIFO, a socket or a device.
        OSError: it cannot be opened.
    """
    try:
        fd = os.open(path, flags | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PathNotAllowed(f"{path}: a symlink; memdir does not follow symlinks") from None
        if exc.errno == errno.EISDIR:
            raise PathNotAllowed(f"{path}: a folder, not a file") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise PathNotAllowed(f"{path}: {describe_mode(st.st_mode)}, not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_replaceable(path: Path) -> None:
    """Refuse to write ``path`` when it is a symlink or a special file (absent is fine).

    Raises:
        PathNotAllowed: with the reason and what to do.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise PathNotAllowed(
            f"{path}: is a symlink; memdir never writes through a symlink (it would change a "
            "file elsewhere): replace the link with a regular file"
        )
    if not stat.S_ISREG(st.st_mode):
        raise PathNotAllowed(
            f"{path}: {describe_mode(st.st_mode)}, not a regular file; not written"
        )


def refuse_read_only(path: Path, mode: int | None = None) -> None:
    """Refuse to change ``path`` when a person made it read-only: its owner has no write
    permission (``chmod a-w``: mode 0444). Absent is fine.

    The mode is read, not tried: an atomic replace renames a new file over the old one, which
    needs only the folder's permission, and root may write any file, so trying would succeed.

    Args:
        path: the file.
        mode: its ``st_mode`` when already known (an ``fstat`` of the open file).

    Raises:
        ReadOnly: naming the file and how to let memdir write it.
    """
    if mode is None:
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return
    if stat.S_ISREG(mode) and not mode & stat.S_IWUSR:
        raise ReadOnly(
            f"{path} is read-only (mode {stat.S_IMODE(mode):04o}): memdir does not replace or "
            "append to a file a person made read-only, and wrote nothing; to let it write "
            f"there: chmod u+w {path}"
        )


def read_only_error(path: Path, exc: OSError) -> ReadOnly:
    """The error for a write of ``path`` that failed with ``exc`` (one of
    :data:`READ_ONLY_ERRNOS`): what cannot be written, and what to do."""
    if exc.errno == errno.EROFS:
        return ReadOnly(
            f"cannot write {path}: it is on a read-only file system, and nothing was written; "
            "remount it read-write, or use a writable copy"
        )
    blocked = next(
        (p for p in (path, path.parent) if os.path.lexists(p) and not os.access(p, os.W_OK)),
        Path(exc.filename) if exc.filename else path,
    )
    return ReadOnly(
        f"cannot write {path}: {blocked} is not writable ({exc.strerror}), and nothing was "
        f"written; to let memdir write there: chmod u+w {blocked}"
    )


def folder_read_only(folder: Path) -> str | None:
    """Why nothing can be created, renamed or removed in ``folder`` (``on a read-only file
    system``, ``not writable (mode 0555)``), or None when it can or does not exist yet.

    ``os.access`` answers for the running user, so root is refused only by a read-only file
    system, as its writes would be.
    """
    try:
        st = os.stat(folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"not usable ({exc.strerror})"
    if os.access(folder, os.W_OK | os.X_OK):
        return None
    if hasattr(os, "statvfs") and os.statvfs(folder).f_flag & os.ST_RDONLY:
        return "on a read-only file system"
    return f"not writable (mode {stat.S_IMODE(st.st_mode):04o})"


def atomic_write(path: Path, text: str, *, tmp_dir: Path | None = None) -> None:
    """Replace ``path`` with ``text`` atomically: temp file, fsync, rename.

    A crash at any point leaves either the old file or the new one. The file mode of an existing
    file is kept. The temp file goes to ``tmp_dir`` (a git-ignored folder on the same file
    system, so a killed write leaves nothing in the notes) or, when that cannot be used, beside
    ``path``.

    Raises:
        PathNotAllowed: ``path`` is a symlink or a special file.
        ReadOnly: a person made ``path`` read-only, or its folder (or file system) is.
        OSError: the write failed otherwise (the old file is untouched).
    """
    check_replaceable(path)
    refuse_read_only(path)
    data = text.encode("utf-8")
    folders = [path.parent] if tmp_dir is None else [tmp_dir, path.parent]
    for n, folder in enumerate(folders):
        try:
            _write_and_rename(path, data, folder)
            return
        except OSError as exc:
            # The temp folder may be on another file system (EXDEV) or not writable: use the
            # target's own folder then.
            if n < len(folders) - 1 and exc.errno in (errno.EXDEV, errno.EACCES, errno.EROFS):
                continue
            if exc.errno in READ_ONLY_ERRNOS:
                raise read_only_error(path, exc) from exc
            raise


def _write_and_rename(path: Path, data: bytes, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            mode = stat.S_IMODE(os.lstat(path).st_mode)
        except FileNotFoundError:
            mode = new_file_mode()  # the usual mode, not mkstemp's 0600
        os.chmod(tmp, mode)
        check_replaceable(path)  # again, right before the rename
        refuse_read_only(path)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def locked_append(path: Path, text: str, *, lock_dir: Path, timeout: float = 10.0) -> int:
    """Append ``text`` to ``path`` under an exclusive cross-process lock; return its first line.

    The text is written whole on an ``O_APPEND`` descriptor and fsynced (:func:`append_whole`:
    or not at all), under the lock, so a concurrent appender never interleaves inside it. A file
    not ending in a newline gets one first.

    Returns:
        The 1-based line number where ``text`` starts.

    Raises:
        PathNotAllowed: ``path`` is a symlink or a special file.
        ReadOnly: a person made ``path`` read-only, or its folder, the lock folder or the file
            system is.
        WorkspaceError: the lock could not be taken within ``timeout`` seconds.
    """
    try:
        return _locked_append(path, text, lock_dir, timeout)
    except OSError as exc:
        if exc.errno in READ_ONLY_ERRNOS:
            raise read_only_error(path, exc) from exc
        raise


def _locked_append(path: Path, text: str, lock_dir: Path, timeout: float) -> int:
    lock_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(lock_dir / f"{_lock_name(path)}.lock"))
    try:
        with lock.acquire(timeout=timeout):
            path.parent.mkdir(parents=True, exist_ok=True)
            check_replaceable(path)
            refuse_read_only(path)
            fd = _open_regular(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
            try:
                refuse_read_only(path, os.fstat(fd).st_mode)  # the file opened, not a swap
                existing = _read_all(fd)
                prefix = b"\n" if existing and not existing.endswith(b"\n") else b""
                start_line = existing.count(b"\n") + 1 + (1 if prefix else 0)
                append_whole(fd, prefix + text.encode("utf-8"), path)
            finally:
                os.close(fd)
            return start_line
    except Timeout as exc:
        raise WorkspaceError(f"{path}: another process holds the write lock; try again") from exc


#: errno values that mean the disk (or the user's quota) is full.
DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


#: A cache (jieba's dictionary, the bridge, USE's parsed state) never takes the last space of a
#: disk: the index and the notes beside it need it more, and a cache can be rebuilt.
CACHE_MIN_FREE_BYTES = 64 * 1024 * 1024


def room_for_cache(folder: Path, size: int) -> bool:
    """True when a cache of ``size`` bytes fits in ``folder``'s disk with
    :data:`CACHE_MIN_FREE_BYTES` still free after it."""
    try:
        return shutil.disk_usage(folder).free >= size + CACHE_MIN_FREE_BYTES
    except OSError:
        return False


def disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk or the quota is full."""
    return isinstance(exc, OSError) and exc.errno in DISK_FULL


def append_whole(fd: int, data: bytes, path: Path | str) -> None:
    """Append ``data`` to the file open on ``fd`` (``O_APPEND``) and fsync it — all of it, or
    none: ``os.write`` may write only part of a buffer (a disk with a few pages left), so the
    rest is written in a loop, and when a write or the fsync fails the file is cut back to the
    length it had, and the error says so. A caller never acknowledges a torn line.

    Raises:
        WorkspaceError: the write failed (the disk is full, or another I/O error); the file is
            as it was.
    """
    size = os.fstat(fd).st_size
    view = memoryview(data)
    try:
        while view:
            written = os.write(fd, view)
            if written <= 0:  # never for a regular file; guards the loop
                raise OSError(errno.EIO, "write returned 0")
            view = view[written:]
        os.fsync(fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)
            os.fsync(fd)
        reason = "the disk is full" if disk_full(exc) else (exc.strerror or str(exc))
        raise WorkspaceError(f"{path}: not written ({reason}); the file is unchanged") from exc


def clean_stale_temp_files(folders: list[Path], *, older_than: float = STALE_TEMP_S) -> list[str]:
    """Remove temp files left by killed :func:`atomic_write` calls in ``folders`` (not below).

    Only names :func:`atomic_write` makes (:data:`TEMP_NAME_RE`), only regular files, only when
    older than ``older_than`` seconds. Returns the removed paths.
    """
    removed: list[str] = []
    cutoff = time.time() - older_than
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if not TEMP_NAME_RE.match(entry.name):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and st.st_mtime < cutoff:
                    os.unlink(entry.path)
                    removed.append(entry.path)
            except OSError:
                continue
    return removed


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine (for stale lock and temp files)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _read_all(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _read_umask() -> int:
    # os.umask can only be read by setting it; do it once, at import, before any threads.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def new_file_mode() -> int:
    """The mode a new file gets (0666 less the umask), not a temp file's 0600."""
    return 0o666 & ~_UMASK


def _lock_name(path: Path) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", str(path.resolve()))[-150:]


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
