"""The per-user service end to end: a real ``memdir daemon run`` process, the ``memdir``
executable as a client, Claude Code's HTTP hook route and MCP over streamable HTTP with the
official SDK client."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from memdir import init_workspace
from memdir.service import daemon
from memdir.service import state as files
from tests.service.conftest import Service, start_service

COMMANDS = [
    ["search", "production database port"],
    ["search", "支付服务端口", "--json"],
    ["get", "MEMORY.md", "--from", "3"],
    ["status"],
    ["get", "no/such/file.md"],  # an error: exit 1, one line on stderr
    ["search"],  # bad usage: exit 2
    ["search", "--help"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a))
def test_a_served_command_prints_what_it_prints_by_itself(
    service: Service, notes: Path, args: list[str]
) -> None:
    served = service.memdir("-w", str(notes), *args)
    alone = service.memdir("-w", str(notes), *args, MEMDIR_SERVICE="off")
    assert (served.returncode, served.stdout, served.stderr) == (
        alone.returncode,
        alone.stdout,
        alone.stderr,
    )
    assert {"workspace": str(notes), "scope": "private"} in service.served()


def test_remember_through_the_service_is_in_the_file_and_found_at_once(
    service: Service, notes: Path
) -> None:
    done = service.memdir("-w", str(notes), "remember", "The staging cluster is k8s-stg-02")
    assert done.returncode == 0, done.stderr
    assert b"remembered in memory/" in done.stdout
    logs = list((notes / "memory").glob("*.md"))
    assert any("k8s-stg-02" in p.read_text(encoding="utf-8") for p in logs)
    found = service.memdir("-w", str(notes), "search", "staging cluster", "--json")
    assert json.loads(found.stdout)["results"][0]["snippet"].count("k8s-stg-02") == 1
    again = service.memdir("-w", str(notes), "remember", "The staging cluster is k8s-stg-02")
    assert b"already" in again.stdout  # deduplicated, as in a process of its own


def test_a_relative_workspace_and_the_environment_s_default_are_the_client_s(
    service: Service, notes: Path
) -> None:
    relative = subprocess.run(
        [*_memdir(), "-w", notes.name, "get", "MEMORY.md"],
        cwd=notes.parent,
        capture_output=True,
        env=service.env(),
        timeout=60,
    )
    assert relative.returncode == 0 and b"db-prod-01" in relative.stdout
    by_env = service.memdir("get", "MEMORY.md", MEMDIR_WORKSPACE=str(notes))
    assert by_env.returncode == 0 and b"db-prod-01" in by_env.stdout


def test_a_different_environment_runs_the_command_in_the_client(
    service: Service, notes: Path
) -> None:
    """MEMDIR_NOW changes what "today" is: the service declines and the client runs it."""
    args = ("-w", str(notes), "remember", "Dated fact", "--json")
    done = service.memdir(*args, MEMDIR_NOW="2031-05-06T10:00:00")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["path"] == "memory/2031-05-06.md"
    assert "the environment differs: MEMDIR_NOW" in (service.home / "service-test.log").read_text()


def test_two_workspaces_stay_apart(service: Service, notes: Path, tmp_path: Path) -> None:
    other, _ = init_workspace(tmp_path / "other", "en")
    assert service.memdir("-w", str(other), "remember", "Only in other: zebra-42").returncode == 0
    here = service.memdir("-w", str(notes), "search", "zebra-42", "--json")
    there = service.memdir("-w", str(other), "search", "zebra-42", "--json")
    assert json.loads(here.stdout)["results"] == []
    assert "zebra-42" in json.loads(there.stdout)["results"][0]["snippet"]
    assert len(service.served()) == 2


def test_hook_through_the_client_reads_stdin(service: Service, notes: Path) -> None:
    hook = json.dumps(
        {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "支付服务端口"}
    ).encode()
    served = service.memdir("hook", "user-prompt-submit", "-w", str(notes), stdin=hook)
    alone = service.memdir(
        "hook", "user-prompt-submit", "-w", str(notes), stdin=hook, MEMDIR_SERVICE="off"
    )
    assert served.returncode == alone.returncode == 0
    assert served.stdout == alone.stdout
    assert "9090" in json.loads(served.stdout)["hookSpecificOutput"]["additionalContext"]


def _post(service: Service, path: str, body: bytes, **headers: str) -> tuple[int, bytes]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{service.port}{path}", data=body, method="POST"
    )
    request.add_header("Authorization", f"Bearer {service.token}")
    for name, value in headers.items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_claude_code_http_hooks(service: Service, notes: Path) -> None:
    where = f"?workspace={notes}"
    prompt = {"hook_event_name": "UserPromptSubmit", "session_id": "s2", "prompt": "db port?"}
    status, body = _post(
        service, f"/v1/hooks/claude-code/user-prompt-submit{where}", json.dumps(prompt).encode()
    )
    assert status == 200
    context = json.loads(body)["hookSpecificOutput"]["additionalContext"]
    assert "<relevant-memories>" in context and "5432" in context
    status, body = _post(
        service,
        f"/v1/hooks/claude-code/session-start{where}",
        json.dumps({"hook_event_name": "SessionStart", "session_id": "s2"}).encode(),
    )
    assert (
        status == 200
        and "db-prod-01" in json.loads(body)["hookSpecificOutput"]["additionalContext"]
    )
    nothing = {"hook_event_name": "UserPromptSubmit", "session_id": "s2", "prompt": "qwxzk"}
    status, body = _post(
        service, f"/v1/hooks/claude-code/user-prompt-submit{where}", json.dumps(nothing).encode()
    )
    assert (status, body) == (200, b"")  # nothing relevant: nothing added
    assert _post(service, "/v1/hooks/claude-code/nope" + where, b"{}")[0] == 404
    assert _post(service, "/v1/hooks/claude-code/session-start?workspace=rel", b"{}")[0] == 400


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Authorization": "Bearer wrong"}, 401),
        ({"Authorization": ""}, 401),
        ({"Host": "evil.example:1"}, 421),
        ({"Host": "127.0.0.1"}, 421),
    ],
)
def test_every_route_checks_host_and_token(
    service: Service, headers: dict[str, str], status: int
) -> None:
    for method, path in [
        ("GET", "/v1/health"),
        ("POST", "/v1/cli"),
        ("POST", "/v1/shutdown"),
        ("POST", "/v1/hooks/claude-code/session-start?workspace=/tmp"),
        ("POST", "/mcp?workspace=/tmp"),
    ]:
        sent = {"Authorization": f"Bearer {service.token}", **headers}
        answer = httpx.request(
            method, f"http://127.0.0.1:{service.port}{path}", headers=sent, timeout=30
        )
        assert answer.status_code == status, (method, path)
    assert daemon.health(service.home) is not None  # not shut down by the refused request


def test_mcp_over_streamable_http(service: Service, notes: Path) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def session(url: str) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {service.token}"}
        out: dict[str, Any] = {}
        async with (
            httpx.AsyncClient(headers=headers, timeout=60) as http,  # the 5 s default: a busy CI
            streamable_http_client(url, http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as mcp,
        ):
            await mcp.initialize()
            out["tools"] = [t.name for t in (await mcp.list_tools()).tools]
            if "memory_forget" in out["tools"]:
                wrote = await mcp.call_tool("memory_write", {"text": "部署改用 Argo CD (p-913)"})
                assert not wrote.is_error, wrote.content
            found = await mcp.call_tool("memory_search", {"query": "Argo CD 部署"})
            out["results"] = json.loads(found.content[0].text)["results"]
            db = await mcp.call_tool("memory_search", {"query": "production database"})
            out["paths"] = [r["path"] for r in json.loads(db.content[0].text)["results"]]
        return out

    base = f"http://127.0.0.1:{service.port}/mcp?workspace={notes}"
    private = anyio.run(session, base)
    assert "p-913" in private["results"][0]["snippet"]  # written, then found at once
    assert "MEMORY.md" in private["paths"]
    shared = anyio.run(session, base + "&scope=shared")
    assert "memory_forget" not in shared["tools"]
    assert "MEMORY.md" not in shared["paths"]  # the shared scope never shows MEMORY.md


def test_a_dead_service_is_passed_by_and_a_new_one_starts(service: Service, notes: Path) -> None:
    os.kill(service.process.pid, signal.SIGKILL)
    service.process.wait(timeout=10)
    assert (service.home / "service" / "service.json").exists()  # stale: its pid is gone
    alone = service.memdir("-w", str(notes), "get", "MEMORY.md")
    assert alone.returncode == 0 and b"db-prod-01" in alone.stdout
    assert files.read_state(service.home) is None
    again = start_service(service.home)  # the lock went with the dead process
    try:
        assert again.memdir("-w", str(notes), "get", "MEMORY.md").stdout == alone.stdout
        assert again.served()
    finally:
        again.process.terminate()
        again.process.wait(timeout=20)
    assert not (service.home / "service" / "service.json").exists()


def test_one_service_per_home(service: Service) -> None:
    second = subprocess.run(
        [*_memdir(), "daemon", "run", "--port", "0"],
        capture_output=True,
        env=service.env(),
        timeout=60,
    )
    assert second.returncode == 1
    assert b"a memdir service already runs" in second.stderr


def test_stop_and_status(service: Service, notes: Path) -> None:
    status = service.memdir("-w", str(notes), "daemon", "status")
    assert f"127.0.0.1:{service.port}".encode() in status.stdout
    assert b"claude mcp add --transport http memdir" in status.stdout
    stopped = service.memdir("daemon", "stop")
    assert stopped.returncode == 0 and b"stopped" in stopped.stdout
    service.process.wait(timeout=20)
    assert service.memdir("daemon", "status").stdout.startswith(b"no memdir service")


def _memdir() -> list[str]:
    import sys

    return [sys.executable, "-m", "memdir"]


def test_a_stopped_service_is_passed_by_in_seconds(service: Service, notes: Path) -> None:
    """SIGSTOP: the socket still accepts, nothing answers; the client runs it itself (a
    hang would end in TimeoutExpired)."""
    os.kill(service.process.pid, signal.SIGSTOP)
    try:
        done = subprocess.run(
            [*_memdir(), "-w", str(notes), "search", "production database"],
            capture_output=True,
            env=service.env(),
            timeout=60,
        )
        assert done.returncode == 0 and b"db-prod-01" in done.stdout
    finally:
        os.kill(service.process.pid, signal.SIGCONT)


def test_an_http_hook_reads_transcripts_only_from_claude_code(
    service: Service, notes: Path, tmp_path: Path
) -> None:
    private = tmp_path / "private.jsonl"
    private.write_text('{"type": "user", "message": {"role": "user", "content": "secret"}}\n')
    hook = {"hook_event_name": "SessionEnd", "session_id": "s9", "transcript_path": str(private)}
    status, body = _post(
        service, f"/v1/hooks/claude-code/session-end?workspace={notes}", json.dumps(hook).encode()
    )
    assert status == 403 and b"not under Claude Code's projects folder" in body
    assert not list((notes / "memory").glob("*-*-*-*.md"))  # nothing archived
