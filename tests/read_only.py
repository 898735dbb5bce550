"""Running memdir where it cannot write, for real, although the tests run as root.

Root ignores file modes, so ``chmod -w`` alone proves nothing there. Two real ways, each a
command prefix for a subprocess, each skipped where the machine does not allow it:

- :func:`read_only_mount`: the folder bind-mounted read-only in a private mount namespace
  (``unshare -m``), so every write fails with ``EROFS``, root's too. The mount exists only for
  that process.
- :func:`as_owner_only`: the process runs without the capabilities that let root ignore modes
  (``setpriv`` drops ``CAP_DAC_OVERRIDE``, ``CAP_DAC_READ_SEARCH`` and ``CAP_FOWNER``), so a
  folder made read-only with ``chmod a-w`` refuses it with ``EACCES`` as it would refuse its
  owner. Not root: no prefix is needed.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile

import pytest

#: Mount ``$1`` read-only over itself, then run the rest of the arguments.
_MOUNT_SCRIPT = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" "$1" && shift && exec "$@"'
_DROPPED = "-dac_override,-dac_read_search,-fowner"
_SETPRIV = ["setpriv", f"--inh-caps={_DROPPED}", f"--bounding-set={_DROPPED}", "--"]


def read_only_mount(folder: os.PathLike[str] | str) -> list[str]:
    """The prefix that runs a command with ``folder`` mounted read-only (or skip the test)."""
    if not _mount_works():
        pytest.skip("a read-only bind mount needs `unshare -m` and mount rights (root)")
    return _mount_prefix(str(folder))


def as_owner_only() -> list[str]:
    """The prefix that runs a command bound by file modes like any user (or skip the test)."""
    if os.geteuid() != 0:
        return []
    if not _setpriv_works():
        pytest.skip("running root without CAP_DAC_OVERRIDE needs `setpriv` (util-linux)")
    return list(_SETPRIV)


@functools.cache
def _mount_works() -> bool:
    if shutil.which("unshare") is None or not hasattr(os, "geteuid") or os.geteuid() != 0:
        return False
    with tempfile.TemporaryDirectory() as folder:
        return _succeeds([*_mount_prefix(folder), *_cannot_touch(folder)])


def _mount_prefix(folder: str) -> list[str]:
    return ["unshare", "-m", "sh", "-c", _MOUNT_SCRIPT, "sh", folder]


def _cannot_touch(folder: str) -> list[str]:
    return ["sh", "-c", '! touch "$1/x" 2>/dev/null', "sh", folder]


@functools.cache
def _setpriv_works() -> bool:
    if shutil.which("setpriv") is None:
        return False
    with tempfile.TemporaryDirectory() as folder:
        os.chmod(folder, 0o555)
        try:
            return _succeeds([*_SETPRIV, *_cannot_touch(folder)])
        finally:
            os.chmod(folder, 0o755)


def _succeeds(command: list[str]) -> bool:
    try:
        return subprocess.run(command, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
