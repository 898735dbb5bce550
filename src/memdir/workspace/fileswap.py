"""Replace a file a person may be writing at the same moment, and lose none of their bytes.

An atomic replace (temp file, fsync, rename) is safe against a crash but not against a person:
``echo "- fact" >> MEMORY.md`` takes no lock, so a line appended after memdir read the file
and before its rename went to the old file, which the rename then threw away (issue 35: 26 of
300 lines lost while memdir wrote sections). :func:`replace_unless_changed` closes that gap
(docs/design.md#files-are-the-truth):

1. The file is opened and read on one descriptor; when it no longer holds what the caller's
   edit was made on (``expected``), nothing is written and the caller redoes its edit on what
   is there now (``changed``).
2. The new bytes go to a temp file (fsynced). Right before the swap the old file is looked at
   again (size, times, inode): changed means step 1's answer.
3. The swap: on Linux ``renameat2(RENAME_EXCHANGE)``, so the file that was replaced stays in
   hand even if a person renamed another over it in the last microseconds
   (``RENAME_NOREPLACE`` for a new file); elsewhere ``os.replace``.
4. The replaced file is read again once nobody has it open for writing any more (a read
   lease, ``F_SETLEASE``, is granted only then: a process that opened it before the swap may
   still write to it; where leases are not available, once it stops changing for a moment).
   It held ``expected``: done. It held ``expected`` plus more: someone appended meanwhile,
   and those bytes are appended to the new file (``swapped`` with ``carried``). Anything else
   (an edit in place, another file renamed over it): the new bytes are in place but the caller
   must redo its edit on the person's text (``displaced``).

The caller owns the retry: :func:`memdir.audit.seam.write_text` carries memdir's line change
onto the person's text and tries again.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from memdir.workspace.fileio import (
    READ_ONLY_ERRNOS,
    append_whole,
    check_replaceable,
    new_file_mode,
    open_regular,
    read_only_error,
    refuse_read_only,
)

try:
    import fcntl
except ImportError:  # not on Windows: no leases there
    fcntl = None  # type: ignore[assignment]

#: How long to wait for writers that still hold the replaced file open (seconds): an
#: ``echo >>`` holds it for microseconds; a program that keeps it open for writing longer is
#: not waited for (what it wrote by then is carried).
SETTLE_S = 2.0
#: Without leases: the replaced file must stay unchanged this long (seconds).
QUIET_S = 0.02

_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_F_SETLEASE = 1024  # Linux's value (the fcntl module has it from Python 3.9 on Linux)
_F_RDLCK, _F_UNLCK = 0, 2

Status = Literal["swapped", "changed", "displaced"]


@dataclass(frozen=True)
class Swap:
    """What :func:`replace_unless_changed` did.

    Attributes:
        status: ``swapped`` (the new bytes are in place), ``changed`` (nothing written: the
            file did not hold ``expected``) or ``displaced`` (the new bytes are in place, but
            the file they replaced had been edited meanwhile).
        now: ``changed``: the file's bytes (None when there is no file); ``displaced``: the
            bytes at the path after the swap (the new ones, plus what was appended since).
        theirs: ``displaced``: the last bytes of the file that was replaced.
        carried: ``swapped``: bytes others appended to the old file meanwhile, appended after
            the new ones.
    """

    status: Status
    now: bytes | None = None
    theirs: bytes = b""
    carried: bytes = b""


def replace_unless_changed(
    path: Path, expected: bytes | None, data: bytes, *, tmp_dir: Path | None = None
) -> Swap:
    """Replace ``path`` with ``data`` if it holds ``expected`` (None: if it does not exist),
    keeping every byte written to it meanwhile (see the module docstring).

    Raises:
        PathNotAllowed: ``path`` is a symlink or a special file.
        ReadOnly: a person made ``path`` read-only, or its folder (or file system) is.
        OSError: the write failed otherwise (the old file is untouched).
    """
    check_replaceable(path)
    refuse_read_only(path)
    try:
        return _replace(path, expected, data, tmp_dir)
    except OSError as exc:
        if exc.errno in READ_ONLY_ERRNOS:
            raise read_only_error(path, exc) from exc
        raise


def _replace(path: Path, expected: bytes | None, data: bytes, tmp_dir: Path | None) -> Swap:
    old = _open_existing(path)
    try:
        current = _read_from(old, 0) if old is not None else None
        if current != expected:
            return Swap("changed", now=current)
        seen = os.fstat(old) if old is not None else None
        tmp = _temp_copy(path, data, seen, tmp_dir)
        try:
            check_replaceable(path)  # again, right before the swap
            refuse_read_only(path)
            swapped = None if _moved(path, old, seen) else _swap(tmp, path, exists=old is not None)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        if swapped is None:  # changed since it was read: nothing written
            os.unlink(tmp)
            return Swap("changed", now=_read_path(path))
        _fsync_dir(path.parent)
        if swapped == "exists":  # a new file, but someone created it first
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            return Swap("changed", now=_read_path(path))
        if old is None or expected is None:
            return Swap("swapped")
        replaced = _replaced_file(tmp, old, seen, exchanged=swapped == "exchanged")
        if replaced != old:
            os.close(old)
            old = replaced
        _settle(old)
        theirs = _read_from(old, 0)
    finally:
        if old is not None:
            os.close(old)
    if theirs == expected:
        return Swap("swapped")
    if theirs.startswith(expected):
        extra = theirs[len(expected) :]
        fd = open_regular(path, os.O_WRONLY | os.O_APPEND)
        try:
            append_whole(fd, extra, path)
        finally:
            os.close(fd)
        return Swap("swapped", carried=extra)
    return Swap("displaced", now=_read_path(path), theirs=theirs)


def _open_existing(path: Path) -> int | None:
    try:
        return open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        return None


def _read_from(fd: int, offset: int) -> bytes:
    chunks = []
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _read_path(path: Path) -> bytes | None:
    try:
        fd = open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        return _read_from(fd, 0)
    finally:
        os.close(fd)


def _temp_copy(path: Path, data: bytes, seen: os.stat_result | None, tmp_dir: Path | None) -> str:
    """``data`` in a fsynced temp file with the mode of the file it will replace; in
    ``tmp_dir`` when it is on the same file system, else beside ``path``."""
    for folder in ([tmp_dir] if tmp_dir is not None else []) + [path.parent]:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if os.stat(folder).st_dev != os.stat(path.parent).st_dev:
                continue
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
        except OSError as exc:
            if folder != path.parent and exc.errno in (errno.EACCES, errno.EROFS):
                continue
            raise
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            mode = stat.S_IMODE(seen.st_mode) if seen is not None else new_file_mode()
            os.chmod(tmp, mode)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        return tmp
    raise OSError(errno.EXDEV, "no temp folder on the file's file system", str(path))


def _moved(path: Path, old: int | None, seen: os.stat_result | None) -> bool:
    """Whether the file at ``path`` changed since it was read (or appeared, for a new one)."""
    if old is None or seen is None:
        return os.path.lexists(path)
    now = os.fstat(old)
    try:
        there = os.lstat(path)
    except FileNotFoundError:
        return True
    return (now.st_size, now.st_mtime_ns, now.st_ctime_ns) != (
        seen.st_size,
        seen.st_mtime_ns,
        seen.st_ctime_ns,
    ) or (there.st_dev, there.st_ino) != (seen.st_dev, seen.st_ino)


def _swap(tmp: str, path: Path, *, exists: bool) -> Literal["exchanged", "replaced", "exists"]:
    """Put ``tmp`` at ``path``: exchanged (the old file is now at ``tmp``), replaced (plain
    rename), or ``exists`` (a new file, and one appeared first: nothing moved)."""
    rename2 = _renameat2()
    if rename2 is not None:
        flags = _RENAME_EXCHANGE if exists else _RENAME_NOREPLACE
        if rename2(_AT_FDCWD, os.fsencode(tmp), _AT_FDCWD, os.fsencode(path), flags) == 0:
            return "exchanged" if exists else "replaced"
        err = ctypes.get_errno()
        if err == errno.EEXIST:
            return "exists"
        if err == errno.ENOENT and exists:
            # The file went away after our check: put ours there, unless one appeared again.
            return _swap(tmp, path, exists=False)
        if err not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise OSError(err, os.strerror(err), str(path))
    os.replace(tmp, path)  # no renameat2 here, or not on this file system
    return "replaced"


def _replaced_file(tmp: str, old: int, seen: os.stat_result | None, *, exchanged: bool) -> int:
    """A descriptor on the file the swap replaced (``old`` itself unless a person renamed
    another file over it in between), with its name (after an exchange) removed."""
    if not exchanged:
        return old
    try:
        fd = os.open(tmp, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _O_CLOEXEC)
    except OSError:  # not a regular file (it was checked, then swapped): nothing to carry
        fd = -1
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    if fd < 0:
        return old
    st = os.fstat(fd)
    if seen is not None and (st.st_dev, st.st_ino) == (seen.st_dev, seen.st_ino):
        os.close(fd)  # the file we read: keep one descriptor on it (a lease counts them)
        return old
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return old
    return fd


def _settle(fd: int) -> None:
    """Return once no process has the (replaced, unlinked) file open for writing any more, or
    after :data:`SETTLE_S`. A read lease is granted only when there is no writer; it is given
    back at once (nobody can open an unlinked file, so nobody waits on it)."""
    deadline = time.monotonic() + SETTLE_S
    if fcntl is None:
        _quiet(fd, deadline)
        return
    command = getattr(fcntl, "F_SETLEASE", _F_SETLEASE)
    while True:
        try:
            fcntl.fcntl(fd, command, _F_RDLCK)
        except OSError as exc:
            busy = exc.errno in (errno.EAGAIN, errno.EBUSY)
            if busy and time.monotonic() < deadline:
                time.sleep(0.002)
                continue
            if not busy:  # no leases on this system or file system, or not the file's owner
                _quiet(fd, deadline)
            return
        fcntl.fcntl(fd, command, _F_UNLCK)
        return


def _quiet(fd: int, deadline: float) -> None:
    """Without leases: wait until the file stays unchanged for :data:`QUIET_S`."""
    last = os.fstat(fd)
    while time.monotonic() < deadline:
        time.sleep(QUIET_S)
        now = os.fstat(fd)
        if (now.st_size, now.st_mtime_ns) == (last.st_size, last.st_mtime_ns):
            return
        last = now


_RENAME2: list[Callable[..., int] | None] = []


def _renameat2() -> Callable[..., int] | None:
    """The C library's ``renameat2`` (Linux, glibc 2.28 or later), or None."""
    if not _RENAME2:
        found = None
        with contextlib.suppress(OSError, AttributeError, TypeError):
            function = ctypes.CDLL(None, use_errno=True).renameat2
            function.argtypes = [
                ctypes.c_int,
                ctypes.c_char_p,
                ctypes.c_int,
                ctypes.c_char_p,
                ctypes.c_uint,
            ]
            function.restype = ctypes.c_int
            found = function
        _RENAME2.append(found)
    return _RENAME2[0]


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


__all__ = ["QUIET_S", "SETTLE_S", "Swap", "replace_unless_changed"]
