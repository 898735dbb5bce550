"""A second Unix user for the tests of what another local user can do to memdir (issue 35).

:func:`other_user` makes the system user ``memdirprobe`` (no home, no shell) when the tests run
as root and ``useradd`` exists, and skips the test otherwise. Two ways to run a command as it:

- :func:`as_other_user`: plainly that user, bound by every file mode; for a probe, run with the
  system Python (``/usr/bin/python3``, standard library only): the interpreter of the suite may
  live under ``/root``, which the user cannot enter.
- :func:`as_other_user_reading`: that user plus ``CAP_DAC_READ_SEARCH`` (read and list any
  file, nothing else: no writing, no owning), so it can start memdir from a virtualenv under
  ``/root`` while every folder it makes and every socket it binds is its own, as for a real
  second user.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

USER = "memdirprobe"
#: The system Python, for probes run as the other user.
SYSTEM_PYTHON = "/usr/bin/python3"


@functools.cache
def _made() -> tuple[int, int] | str:
    """The user's uid and gid, or why there is none."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "making a second Unix user needs root"
    if shutil.which("setpriv") is None:
        return "running a command as another user needs `setpriv` (util-linux)"
    found = subprocess.run(["id", "-u", USER], capture_output=True, text=True)
    if found.returncode != 0:
        if shutil.which("useradd") is None:
            return "no `useradd` to make a second Unix user"
        made = subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
            capture_output=True,
            text=True,
        )
        if made.returncode != 0:
            return f"cannot create user {USER}: {made.stderr.strip()}"
    uid = int(subprocess.run(["id", "-u", USER], capture_output=True, text=True).stdout)
    gid = int(subprocess.run(["id", "-g", USER], capture_output=True, text=True).stdout)
    return uid, gid


def other_user() -> tuple[int, int]:
    """The second user's uid and gid (or skip the test, saying why)."""
    made = _made()
    if isinstance(made, str):
        pytest.skip(made)
    return made


def as_other_user() -> list[str]:
    """The prefix that runs a command as the second user, bound by file modes."""
    uid, gid = other_user()
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"]


def as_other_user_reading() -> list[str]:
    """The prefix that runs a command as the second user who may read any file (to load this
    suite's Python and memdir), and nothing more."""
    uid, gid = other_user()
    caps = "+dac_read_search"
    return [
        "setpriv",
        f"--reuid={uid}",
        f"--regid={gid}",
        "--clear-groups",
        f"--inh-caps={caps}",
        f"--ambient-caps={caps}",
        "--",
    ]


def give_to_other_user(*paths: Path) -> None:
    """Make ``paths`` (folders: with everything in them) the second user's."""
    uid, gid = other_user()
    for path in paths:
        for item in [path, *path.rglob("*")] if path.is_dir() else [path]:
            os.chown(item, uid, gid, follow_symlinks=False)
