"""The service's listeners (issue 35): what the TCP port answers, which token it takes, where its
socket lives and which folders it refuses as workspaces. A real ``memdir daemon run`` process,
real sockets, the ``memdir`` executable as a client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from memdir.service import state as files
from memdir.service.protocol import build_id, encode_request, post
from tests.service.conftest import Service, start_service


def _tcp(service: Service, method: str, path: str, body: bytes = b"", token: str = "") -> int:
    headers = {"Authorization": f"Bearer {token or service.token}"}
    url = f"http://127.0.0.1:{service.port}{path}"
    return httpx.request(method, url, content=body, headers=headers, timeout=60).status_code


def test_the_cli_route_answers_on_the_socket_only(
    service: Service, notes: Path, tmp_path: Path
) -> None:
    """The probe: with the token, ``POST /v1/cli`` on the TCP port ran ``hook session-end`` on
    a 0600 file outside Claude Code's projects folder and archived it into the workspace."""
    private = tmp_path / "private.jsonl"
    line = {"type": "user", "message": {"role": "user", "content": "the vault code is 4471"}}
    private.write_text(json.dumps(line) + "\n")
    private.chmod(0o600)
    hook = json.dumps(
        {"hook_event_name": "SessionEnd", "session_id": "p4", "transcript_path": str(private)}
    ).encode()
    argv = ["-w", str(notes), "hook", "session-end"]
    body = encode_request(argv, "/", dict(service.env()), "00:0:0", hook, build=build_id())
    for path in ("/v1/cli", "/v1/cli/", "/v1/%63li", "/v1/ui?workspace=/tmp&port=0"):
        assert _tcp(service, "POST", path, body) == 404, path
    assert _tcp(service, "POST", "/v1/shutdown") == 404
    assert not list((notes / "memory").glob("*-*-*-*.md"))  # nothing archived
    assert _tcp(service, "GET", "/v1/health") == 200  # still running, TCP still served
    # The socket still serves the client (only its user can connect to it).
    done = service.memdir("-w", str(notes), "get", "MEMORY.md")
    assert done.returncode == 0 and b"db-prod-01" in done.stdout


def test_no_hook_route_reads_a_transcript_outside_claude_code_s_folder(
    isolated_env: Path, notes: Path, tmp_path: Path
) -> None:
    """Every event that reads a transcript, named directly or through a link inside Claude
    Code's projects folder, is refused on TCP; one really inside is read."""
    claude = tmp_path / "claude"
    (claude / "projects" / "p").mkdir(parents=True)
    outside = tmp_path / "outside.jsonl"
    line = {"type": "user", "message": {"role": "user", "content": "remember: vault 4471"}}
    outside.write_text(json.dumps(line) + "\n")
    link = claude / "projects" / "p" / "link.jsonl"
    link.symlink_to(outside)
    inside = claude / "projects" / "p" / "real.jsonl"
    inside.write_text(json.dumps(line) + "\n")
    running = start_service(isolated_env, CLAUDE_CONFIG_DIR=str(claude))
    try:
        for event in ("pre-compact", "session-end"):
            for given in (outside, link, claude / "projects" / ".." / ".." / "outside.jsonl"):
                hook = {"hook_event_name": "x", "session_id": "s", "transcript_path": str(given)}
                path = f"/v1/hooks/claude-code/{event}?workspace={notes}"
                status = _tcp(running, "POST", path, json.dumps(hook).encode())
                assert status == 403, (event, given)
        hook = {"hook_event_name": "SessionEnd", "session_id": "s", "transcript_path": str(inside)}
        path = f"/v1/hooks/claude-code/session-end?workspace={notes}"
        assert _tcp(running, "POST", path, json.dumps(hook).encode()) == 200
    finally:
        running.process.terminate()
        running.process.wait(timeout=20)
    archived = list((notes / "memory").glob("*-*-*-*.md"))
    assert len(archived) == 1  # the one inside, and only that one


def test_a_rotated_token_is_followed_at_once(service: Service, notes: Path) -> None:
    """The probe: after ``memdir daemon token --rotate`` the service kept the old token, so
    ``status`` said no service ran and ``start`` failed after 20 s."""
    old = service.token
    rotated = service.memdir("daemon", "token", "--rotate")
    assert rotated.returncode == 0, rotated.stderr
    new = rotated.stdout.decode().strip()
    assert new and new != old
    assert _tcp(service, "GET", "/v1/health", token=old) == 401  # the old one no longer works
    assert _tcp(service, "GET", "/v1/health", token=new) == 200
    status = service.memdir("daemon", "status")
    assert f"127.0.0.1:{service.port}".encode() in status.stdout, status.stdout
    started = time.monotonic()
    again = service.memdir("daemon", "start")
    assert again.returncode == 0 and b"running (pid" in again.stdout, again.stderr
    assert time.monotonic() - started < 15
    served = service.memdir("-w", str(notes), "search", "production database")
    assert served.returncode == 0 and b"db-prod-01" in served.stdout
    assert {"workspace": str(notes), "scope": "private"} in service.served()  # through it


def test_a_token_file_that_goes_bad_lets_nothing_in(service: Service) -> None:
    token_file = service.home / "service" / "token"
    token_file.chmod(0o644)
    try:
        assert _tcp(service, "GET", "/v1/health") == 401
        where = files.endpoint(service.home)
        assert where is not None
        assert post(where[0], service.token, "/v1/health", b"", method="GET")[0] == 401
    finally:
        token_file.chmod(0o600)
    assert _tcp(service, "GET", "/v1/health") == 200


def test_start_waits_for_a_service_that_holds_the_lock_instead_of_starting_another(
    service: Service,
) -> None:
    """A service that runs but does not answer (stopped): ``start`` says so, naming it."""
    import signal

    os.kill(service.process.pid, signal.SIGSTOP)
    try:
        done = subprocess.run(
            [sys.executable, "-c", "from memdir.service import daemon; daemon.start(wait=2)"],
            capture_output=True,
            env=service.env(),
            timeout=60,
        )
    finally:
        os.kill(service.process.pid, signal.SIGCONT)
    assert done.returncode == 1
    assert f"a memdir service runs (pid {service.process.pid})".encode() in done.stderr
    assert b"memdir daemon stop" in done.stderr


def test_a_home_folder_is_not_served_as_a_workspace(tmp_path: Path) -> None:
    """The probe: ``/mcp?workspace=<a home>`` made index files inside that home's ``.memdir``
    (memdir's own home); now the MCP and hook routes refuse it with the reason, and nothing is
    made there."""
    home = tmp_path / "home" / "ann"
    state = home / ".memdir"
    state.mkdir(parents=True)
    (state / "config.toml").write_text('[embedding]\nprovider = "fake"\n')
    (home / "todo.txt").write_text("buy milk\n")
    running = start_service(state, HOME=str(home))
    try:
        before = sorted(p for p in home.rglob("*") if "service" not in p.parts)
        hello = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "probe", "version": "1"},
            },
        }
        answer = httpx.post(
            f"http://127.0.0.1:{running.port}/mcp?workspace={home}",
            json=hello,
            headers={
                "Authorization": f"Bearer {running.token}",
                "Accept": "application/json, text/event-stream",
            },
            timeout=60,
        )
        assert answer.status_code == 404 and "is a user's home folder" in answer.text
        for where in (home, state):
            hook = b'{"hook_event_name": "SessionStart", "session_id": "h"}'
            path = f"/v1/hooks/claude-code/session-start?workspace={where}"
            assert _tcp(running, "POST", path, hook) == 400, where
        after = sorted(p for p in home.rglob("*") if "service" not in p.parts)
        assert after == before
        assert running.served() == []
    finally:
        running.process.terminate()
        running.process.wait(timeout=20)
