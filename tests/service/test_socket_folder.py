"""Where the service's Unix socket goes (issue 35): a folder only its user can create; a folder
someone else made first, a link or a file in the way is passed by for a fresh private one, and
the thin client finds the socket where the service wrote it down."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from memdir.service import state as files
from memdir.service import unix_socket
from memdir.service.protocol import read_endpoint
from tests.other_user import as_other_user_reading, give_to_other_user, other_user


@pytest.fixture
def long_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``MEMDIR_HOME`` too long for ``service/service.sock``, no runtime folder, and a
    temporary folder of the test's own (so nothing here touches the machine's ``/tmp``)."""
    home = tmp_path / ("h" * 120)
    home.mkdir()
    monkeypatch.setenv("MEMDIR_HOME", str(home))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return home


def _private(folder: Path) -> bool:
    info = os.lstat(folder)
    mode = stat.S_IMODE(info.st_mode)
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and mode == 0o700


def _round_trip(listener: unix_socket.Listener) -> None:
    """The thin client finds the socket the service wrote in ``service.json``."""
    token = files.token()
    state = files.ServiceState(1, os.getpid(), "0", "now", str(listener.path))
    files.write_state(state)
    assert read_endpoint() == (str(listener.path), token)
    assert files.read_state() == state


def test_a_long_home_puts_the_socket_in_the_runtime_folder(
    long_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    listener = unix_socket.bind()
    try:
        assert listener.path.parent == run / "memdir" and _private(listener.path.parent)
        assert listener.own_folder is None
        _round_trip(listener)
    finally:
        listener.sock.close()
        listener.remove()
    assert not listener.path.exists()


def test_a_runtime_folder_others_can_write_is_passed_by(
    long_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    run.chmod(0o777)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    listener = unix_socket.bind()
    try:
        assert listener.path.parent == Path(tempfile.gettempdir()) / f"memdir-{os.getuid()}"
        assert _private(listener.path.parent)
        _round_trip(listener)
    finally:
        listener.sock.close()
        listener.remove()


SQUATS = ["another user's folder", "a link to a folder", "a file", "a file as the socket"]


@pytest.mark.parametrize("squat", SQUATS)
def test_a_squatted_folder_gets_a_fresh_private_one(
    long_home: Path, tmp_path: Path, squat: str
) -> None:
    shared = Path(tempfile.gettempdir()) / f"memdir-{os.getuid()}"
    if squat == "another user's folder":
        if os.geteuid() != 0:
            pytest.skip("giving a folder to another user needs root")
        shared.mkdir(mode=0o700)
        os.chown(shared, 65534, 65534)
    elif squat == "a link to a folder":
        target = tmp_path / "elsewhere"
        target.mkdir(mode=0o700)
        shared.symlink_to(target)
    elif squat == "a file":
        shared.write_text("in the way\n")
    else:
        shared.mkdir(mode=0o700)
        expected = next(p for p in unix_socket.candidates() if p.parent == shared)
        expected.write_text("not a socket\n")
    listener = unix_socket.bind()
    try:
        folder = listener.path.parent
        assert listener.own_folder == folder and folder.parent == shared.parent
        assert folder.name.startswith(f"memdir-{os.getuid()}-") and _private(folder)
        _round_trip(listener)
    finally:
        listener.sock.close()
        listener.remove()
    assert not folder.exists()  # the service's own folder goes with it


def test_another_user_making_the_folder_first_does_not_stop_the_service(tmp_path: Path) -> None:
    """The probe: with a long ``MEMDIR_HOME`` the socket went to ``/tmp/memdir-<uid>``; a user
    who made that folder first kept the service from starting. Here the service runs as a
    second Unix user and root makes that user's folder first, in the real ``/tmp``."""
    prefix = as_other_user_reading()
    uid, _ = other_user()
    squat = Path(f"/tmp/memdir-{uid}")
    if squat.is_symlink() or squat.is_file():
        squat.unlink()
    shutil.rmtree(squat, ignore_errors=True)
    squat.mkdir(mode=0o700)  # root's, not the service user's
    home = tmp_path / ("h" * 120)
    home.mkdir()
    (home / "config.toml").write_text('[embedding]\nprovider = "fake"\n')
    give_to_other_user(home)
    drop = {"MEMDIR_SERVICE", "XDG_RUNTIME_DIR", "TMPDIR"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(MEMDIR_HOME=str(home), HOME=str(home))
    log = tmp_path / "service.log"
    with open(log, "wb") as err:
        process = subprocess.Popen(
            [*prefix, sys.executable, "-m", "memdir", "daemon", "run", "--port", "0"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=err,
            stderr=err,
        )
    state_file = home / "service" / "service.json"
    try:
        deadline = time.monotonic() + 60
        while not state_file.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert process.poll() is None and state_file.exists(), log.read_text()
        socket_path = Path(json.loads(state_file.read_text())["socket"])
        folder = socket_path.parent
        assert folder != squat and folder.name.startswith(f"memdir-{uid}-")
        info = os.lstat(folder)
        assert info.st_uid == uid and info.st_mode & 0o777 == 0o700
        ask = "import json; from memdir.service import daemon; print(json.dumps(daemon.health()))"
        answer = subprocess.run(
            [*prefix, sys.executable, "-c", ask], env=env, capture_output=True, timeout=60
        )
        assert json.loads(answer.stdout)["pid"] == process.pid, answer.stderr
    finally:
        process.terminate()
        process.wait(timeout=30)
        shutil.rmtree(squat, ignore_errors=True)
    assert not folder.exists()  # removed when the service stopped


def test_a_socket_path_with_any_characters_is_read_back(tmp_path: Path, isolated_env: Path) -> None:
    """The thin client reads ``service.json``'s socket without json: quotes, backslashes,
    non-ASCII and a name that is not UTF-8 come back as written."""
    import socket

    name = os.fsdecode(b'q "\\ \xc3\xbc \xe7\xac\x94 \xff')
    folder = tmp_path / name
    folder.mkdir(mode=0o700)
    path = folder / "s.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
        token = files.token()
        files.write_state(files.ServiceState(1, os.getpid(), "0", "now", str(path)))
        assert read_endpoint() == (str(path), token)
        folder.chmod(0o755)  # a folder others may enter: not trusted
        assert read_endpoint() is None
    finally:
        sock.close()
