"""The service's parts without a process: the thin client's arguments and framing, per-request
streams, the environment check, the pool, the token, and the HTTP hook entries."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import click
import pytest

from memdir import Memory
from memdir.client import absolute_workspaces
from memdir.config.settings import load_config
from memdir.deadline import CallTimedOut, run_with_timeout
from memdir.errors import MemdirError
from memdir.hooks.claude_code import (
    install_hooks,
    is_memdir_url,
    token_settings_path,
    uninstall_hooks,
)
from memdir.service import state as files
from memdir.service import unix_socket
from memdir.service.capture import captured
from memdir.service.commands import Declined, decode_request, env_differences
from memdir.service.pool import Pool
from memdir.service.protocol import (
    command_of,
    decode_answer,
    encode_answer,
    encode_request,
    parse_response,
    read_endpoint,
)


def test_command_of_skips_the_workspace_option() -> None:
    assert command_of(["-w", "x", "search", "q"]) == "search"
    assert command_of(["--workspace=x", "get", "p"]) == "get"
    assert command_of(["-wx", "status"]) == "status"
    assert command_of(["--version"]) is None
    assert command_of([]) is None


def test_workspaces_are_made_absolute_and_the_default_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert absolute_workspaces(["-w", "notes", "search", "q"]) == [
        "-w",
        str(tmp_path / "notes"),
        "search",
        "q",
    ]
    assert absolute_workspaces(["search", "q", "--workspace=n2"]) == [
        "search",
        "q",
        f"--workspace={tmp_path / 'n2'}",
    ]
    assert absolute_workspaces(["status"]) == [
        "-w",
        str(Path(os.environ["MEMDIR_HOME"]) / "workspace"),
        "status",
    ]
    monkeypatch.setenv("MEMDIR_WORKSPACE", "~/w")
    assert absolute_workspaces(["get", "MEMORY.md"])[:2] == ["-w", str(Path.home() / "w")]
    assert absolute_workspaces(["search", "--", "-w"])[-2:] == ["--", "-w"]
    assert absolute_workspaces(["chat"]) is None  # not a command the service runs
    assert absolute_workspaces(["search", "q", "-w"]) is None  # -w without a value


def test_the_request_and_answer_round_trip() -> None:
    argv = ["-w", "/n", "search", "支付 = 端口", "\udcff"]
    env = {"A": "1=2", "MEMDIR_X": "é"}
    body = encode_request(argv, "/cwd", env, "10:120:40", b"in\0put")
    request = decode_request(body)
    assert (request.argv, request.cwd, request.env) == (argv, "/cwd", env)
    assert (request.stdout_tty, request.stderr_tty, request.columns, request.lines) == (
        True,
        False,
        120,
        40,
    )
    assert request.stdin == b"in\0put"
    assert request.console_env()["COLUMNS"] == "120"
    no_terminal = decode_request(encode_request(argv, "/", {}, "00:0:0", b""))
    assert (no_terminal.console_env()["COLUMNS"], no_terminal.console_env()["LINES"]) == (
        "80",
        "25",
    )  # rich's own fallback, not the service's terminal
    assert decode_answer(encode_answer(2, b"out\n", b"err")) == (2, b"out\n", b"err")
    assert decode_answer(b"garbage") is None
    with pytest.raises(Declined):
        decode_request(b"memdir-cli/9\n")
    with pytest.raises(Declined):
        decode_request(body[:-20])


def test_a_chunked_http_answer_is_read() -> None:
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    assert parse_response(raw) == (200, b"abcde")
    with pytest.raises(OSError):
        parse_response(b"nonsense")


def test_the_endpoint_is_a_private_socket_of_a_live_service(isolated_env: Path) -> None:
    assert read_endpoint() is None
    files.write_state(files.ServiceState(43210, os.getpid(), "0", "now"))
    token = files.token()
    assert read_endpoint() is None  # no socket yet
    listener = unix_socket.bind()
    try:
        path = str(listener.path)
        assert read_endpoint() == (path, token)  # no "socket" in the state: the usual place
        assert os.stat(path).st_mode & 0o777 == 0o600
        files.write_state(files.ServiceState(43210, os.getpid(), "0", "now", path))
        assert read_endpoint() == (path, token)
        files.write_state(files.ServiceState(43210, 2**22 + 12345, "0", "now"))  # pid gone
        assert read_endpoint() is None
        assert files.read_state() is None
    finally:
        listener.sock.close()
        listener.remove()
    files.clear_state(2**22 + 12345)
    assert not (isolated_env / "service" / "service.json").exists()


def test_a_stale_state_never_signals_another_process(isolated_env: Path) -> None:
    import subprocess

    from memdir.service import daemon

    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        files.write_state(files.ServiceState(1, sleeper.pid, "0", "now"))
        assert daemon.stop(wait=1) is None
        assert sleeper.poll() is None  # still running
    finally:
        sleeper.kill()
        sleeper.wait()


def test_autostart_tries_once_a_minute(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memdir.service import daemon

    spawned: list[bool] = []
    monkeypatch.setattr(daemon, "_spawn", lambda **kw: spawned.append(True))
    daemon.start_quietly()
    daemon.start_quietly()
    assert spawned == [True]
    marker = isolated_env / "service" / files.AUTOSTART_FILE
    os.utime(marker, (time.time() - 120, time.time() - 120))
    daemon.start_quietly()
    assert spawned == [True, True]
    (isolated_env / "config.toml").write_text("[service]\nautostart = false\n")
    marker.unlink()
    daemon.start_quietly()
    assert spawned == [True, True]


def test_concurrent_first_uses_agree_on_one_token(isolated_env: Path) -> None:
    seen: list[str] = []
    threads = [threading.Thread(target=lambda: seen.append(files.token())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(seen)) == 1 and seen[0] == files.token()
    assert [p.name for p in (isolated_env / "service").iterdir()] == ["token"]


def test_the_token_is_private_and_kept(isolated_env: Path) -> None:
    token = files.token()
    path = isolated_env / "service" / "token"
    assert path.stat().st_mode & 0o777 == 0o600
    assert files.token() == token
    assert files.token(rotate=True) != token
    path.chmod(0o644)
    with pytest.raises(MemdirError, match="can be read by other users"):
        files.token()


def test_concurrent_requests_keep_their_own_streams() -> None:
    out: dict[int, bytes] = {}

    def request(n: int) -> None:
        with captured(f"in-{n}".encode(), stdout_tty=False, stderr_tty=False) as streams:
            for _ in range(50):
                click.echo(f"line {n} {sys.stdin.read()}")
                time.sleep(0.001)
                sys.stdin.seek(0)
        out[n] = streams.output["stdout"]

    threads = [threading.Thread(target=request, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for n in range(4):
        assert out[n] == f"line {n} in-{n}\n".encode() * 50
    with captured(b"", stdout_tty=False, stderr_tty=False, io=("latin-1", "strict") * 2) as raw:
        click.echo("café")
    assert raw.output["stdout"] == "café\n".encode("latin-1")
    with captured(b"", stdout_tty=True, stderr_tty=False) as streams:  # a later one, too
        click.echo("again")
        click.echo("to stderr", err=True)
        assert sys.stdout.isatty() and not sys.stderr.isatty()
    assert streams.output == {"stdout": b"again\n", "stderr": b"to stderr\n"}


def test_the_environment_check() -> None:
    same = {"MEMDIR_NOW": "x", "PATH": "/a", "TERM": "xterm"}
    assert env_differences(same, {**same, "PATH": "/b", "TERM": "dumb"}) == []
    assert env_differences(same, {"PATH": "/a"}) == ["MEMDIR_NOW"]
    assert env_differences({"OPENAI_API_KEY": "k"}, {}) == ["OPENAI_API_KEY"]
    assert env_differences({"TZ": "Asia/Shanghai"}, {"TZ": "UTC"}) == ["TZ"]
    assert env_differences({"MEMDIR_WORKSPACE": "a", "MEMDIR_HOME": "b"}, {}) == []
    config = load_config().with_overrides({"llm": {"api_key": "env:MY_OWN_KEY"}})
    assert env_differences({"MY_OWN_KEY": "1"}, {}, config) == ["MY_OWN_KEY"]
    assert env_differences({"MY_OWN_KEY": "1"}, {}) == []


@pytest.fixture
def fake_home(isolated_env: Path) -> Path:
    (isolated_env / "config.toml").write_text('[embedding]\nprovider = "fake"\n')
    return isolated_env


def test_the_pool_lends_one_memory_per_workspace_and_scope(
    fake_home: Path, workspace: Path, tmp_path: Path
) -> None:
    pool = Pool(watch=False)
    try:
        with pool.lend(workspace) as first:
            assert isinstance(first, Memory)
        with pool.lend(workspace) as again:
            assert again is first
        with pool.lend(workspace, "shared") as shared:
            assert shared is not first and shared.scope == "shared"
        with pytest.raises(MemdirError, match="not a workspace folder"):
            pool.get(tmp_path / "missing")
        with pytest.raises(MemdirError, match="not a workspace folder"):
            pool.get(Path("relative"))
    finally:
        pool.close()


def test_a_changed_config_reopens_the_workspace(fake_home: Path, workspace: Path) -> None:
    pool = Pool(watch=False)
    try:
        first = pool.get(workspace).memory
        assert first.config.search.max_results == 6
        (workspace / ".memdir" / "config.toml").write_text("[search]\nmax_results = 4\n")
        second = pool.get(workspace).memory
        assert second is not first and second.config.search.max_results == 4
    finally:
        pool.close()


def test_an_abandoned_call_leaves_the_next_one_a_fresh_memory(
    fake_home: Path, workspace: Path
) -> None:
    pool = Pool(watch=False)
    release = threading.Event()
    try:
        with pool.lend(workspace) as memory, pytest.raises(CallTimedOut):
            run_with_timeout(release.wait, 0.05, "a stuck search")
        with pool.lend(workspace, timeout=1) as fresh:  # not "busy", not the same
            assert fresh is not memory
    finally:
        release.set()
        pool.close()


def test_idle_workspaces_are_closed(fake_home: Path, workspace: Path) -> None:
    pool = Pool(idle_s=60, watch=False)
    warm = pool.get(workspace)
    assert pool.close_idle(now=time.monotonic() + 30) == []
    assert pool.close_idle(now=time.monotonic() + 61) == [warm]
    assert pool.served() == []
    assert pool.idle_for(now=time.monotonic() + 5) >= 5


def test_http_hooks_are_installed_beside_the_session_start_command(tmp_path: Path) -> None:
    settings = tmp_path / "project" / ".claude" / "settings.json"
    config = load_config().hooks
    token = "t" * 40
    change = install_hooks(
        settings, tmp_path / "notes", config=config, http_port=8766, http_token=token
    )
    data = json.loads(settings.read_text())
    start = data["hooks"]["SessionStart"][0]["hooks"][0]
    assert start["type"] == "command" and "hook session-start" in start["command"]
    prompt = data["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    assert prompt["type"] == "http"
    assert prompt["url"] == (
        f"http://127.0.0.1:8766/v1/hooks/claude-code/user-prompt-submit?workspace={tmp_path}/notes"
    )
    # the token itself, not an environment variable some of Claude Code's paths leave unset
    assert prompt["headers"] == {"Authorization": f"Bearer {token}"}
    assert "allowedEnvVars" not in prompt
    assert settings.stat().st_mode & 0o777 == 0o600
    assert prompt["timeout"] == 15  # recall_timeout 10 + 5
    assert len(change.added) == 4
    # installing again as commands replaces the HTTP entries; uninstalling removes all
    install_hooks(settings, tmp_path / "notes", config=config)
    data = json.loads(settings.read_text())
    kinds = {group["hooks"][0]["type"] for groups in data["hooks"].values() for group in groups}
    assert kinds == {"command"}
    install_hooks(settings, tmp_path / "notes", config=config, http_port=8766)
    assert len(uninstall_hooks(settings).removed) == 4
    assert "hooks" not in json.loads(settings.read_text())
    assert is_memdir_url("http://localhost:1/v1/hooks/claude-code/pre-compact")
    assert not is_memdir_url("http://example.com/v1/hooks/claude-code/pre-compact")


def test_http_hooks_go_to_a_settings_file_that_is_not_shared(
    tmp_path: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from memdir import init_workspace
    from memdir.cli.main import cli
    from memdir.service import ports

    settings = tmp_path / "project" / ".claude" / "settings.json"
    local = token_settings_path(settings)
    assert local.name == "settings.local.json"
    assert token_settings_path(tmp_path / "mine.json") == tmp_path / "mine.json"
    (isolated_env / "config.toml").write_text('[embedding]\nprovider = "fake"\n')
    ws, _ = init_workspace(tmp_path / "notes", "en")
    local.parent.mkdir(parents=True)
    local.write_text('{"env": {"MEMDIR_TOKEN": "old", "KEEP": "1"}}')  # an earlier install
    local.chmod(0o644)
    (files.folder() / ports.PORT_FILE).write_text("9123\n")  # this home's port
    monkeypatch.chdir(tmp_path / "project")
    runner = CliRunner()
    plain = ["-w", str(ws), "hooks", "install", "claude-code"]
    assert runner.invoke(cli, plain, catch_exceptions=False).exit_code == 0
    done = runner.invoke(cli, [*plain, "--http"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert "hooks" not in json.loads(settings.read_text())  # moved out of the shared file
    data = json.loads(local.read_text())
    assert data["env"] == {"KEEP": "1"}
    prompt = data["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    assert prompt["url"].startswith("http://127.0.0.1:9123/")
    assert prompt["headers"]["Authorization"] == f"Bearer {files.token()}"
    assert local.stat().st_mode & 0o777 == 0o600
    back = runner.invoke(cli, plain, catch_exceptions=False)  # plain again: out of the local one
    assert back.exit_code == 0 and "hooks" not in json.loads(local.read_text())
    runner.invoke(cli, [*plain, "--http"], catch_exceptions=False)
    gone = runner.invoke(cli, ["hooks", "uninstall", "claude-code"], catch_exceptions=False)
    assert "removed 4 memdir hook(s)" in gone.output
    assert "hooks" not in json.loads(local.read_text())


def test_a_client_of_another_build_is_declined(fake_home: Path, workspace: Path) -> None:
    from memdir.service.commands import run_command

    body = encode_request(
        ["-w", str(workspace), "status"], "/", dict(os.environ), "00:0:0", b"", build="0.0.1@1"
    )
    with pytest.raises(Declined, match=r"the client runs memdir 0\.0\.1@1"):
        run_command(Pool(watch=False), decode_request(body))


def test_a_transcript_that_is_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    from memdir.hooks.transcript import read_transcript

    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(MemdirError, match="not a regular file"):
        read_transcript(fifo)


def test_a_command_for_a_busy_workspace_is_declined(
    fake_home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memdir.service.commands as commands
    from memdir.service.commands import BUILD

    monkeypatch.setattr(commands, "BUSY_S", 0.1)
    pool = Pool(watch=False)
    body = encode_request(
        ["-w", str(workspace), "status"], "/", dict(os.environ), "00:0:0", b"", build=BUILD
    )
    try:
        assert decode_answer(commands.run_command(pool, decode_request(body)))[0] == 0
        warm = pool.get(workspace)
        with warm.lock, pytest.raises(Declined, match="busy"):
            commands.run_command(pool, decode_request(body))
    finally:
        pool.close()
