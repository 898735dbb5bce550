"""Issue 27, item 8 (the smaller findings), re-run end to end as the probe ran them:

1. raw JSON-RPC lines with lone surrogates and bytes that are not UTF-8, written to a real
   ``memdir serve``: each request gets an answer, and the server keeps serving;
2. a read-only workspace (a read-only mount, a folder made read-only): every writer of the CLI
   and ``memory_write`` over MCP refuse with one clear error, and nothing changes;
3. MEMORY.md and a daily log made read-only (0444): the CLI's writers leave them alone;
4. ``memdir ui --host 127.0.0.2``: the URL it prints answers;
5. ``memdir ui --host 0.0.0.0 --allow-remote``: no request path redirects off-site.
"""

from __future__ import annotations

import json
import os
import random
import re
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import mcp_types as types
import pytest

from memdir import FakeEmbedder, Memory, init_workspace
from memdir.ui import create_app
from tests.helpers import write
from tests.read_only import as_owner_only, read_only_mount
from tests.test_mcp_stdio import RawClient, request
from tests.test_read_only import (
    FACT,
    WRITERS,
    check_every_writer_refuses,
    check_mcp_write_refused,
    run_cli,
    snapshot,
)
from tests.torture.conftest import TALLY
from tests.ui.conftest import start_ui, stop_ui
from tests.ui.test_process import raw_get

pytestmark = pytest.mark.torture

#: Bytes that never occur in UTF-8, and lone continuation bytes.
NOT_UTF8 = [bytes([b]) for b in (0xC0, 0xC1, 0xF5, 0xF8, 0xFE, 0xFF, 0x80, 0x9F, 0xBF)]


@pytest.fixture
def ws(tmp_path: Path, isolated_env: Path) -> Path:
    (isolated_env / "config.toml").write_text('[embedding]\nprovider = "fake"\n', encoding="utf-8")
    root, _ = init_workspace(tmp_path / "ws", "en")
    write(root, "memory/2026-11-28.md", "# 2026-11-28\n- The walrus sings at dawn.\n")
    with Memory(root, embedder=FakeEmbedder()) as memory:
        memory.write(FACT)
        memory.write(FACT, target="memory", section="facts")
    return root


# -- 1. lines the SDK cannot read ---------------------------------------------------------------


def corrupt(rng: random.Random, n: int) -> tuple[bytes, int]:
    """A tools/call request with id ``n`` whose arguments hold a lone surrogate escape or
    bytes that are not UTF-8; the code its answer must carry."""
    tool, key = rng.choice(
        [("memory_search", "query"), ("memory_write", "text"), ("memory_get", "path")]
    )
    value = "walrus at dawn " * rng.randint(0, 3) + "pier"
    at = rng.randint(0, len(value))
    line = request(n, "tools/call", {"name": tool, "arguments": {key: value}})
    marker = json.dumps(value).encode()
    head, tail = value[:at].encode(), value[at:].encode()
    if rng.random() < 0.5:
        surrogate = f"\\u{rng.randint(0xD800, 0xDFFF):04x}".encode()
        return line.replace(marker, b'"' + head + surrogate + tail + b'"'), types.INVALID_PARAMS
    junk = b"".join(rng.choice(NOT_UTF8) for _ in range(rng.randint(1, 3)))
    return line.replace(marker, b'"' + head + junk + tail + b'"'), types.PARSE_ERROR


def test_every_hostile_request_line_is_answered(ws: Path, isolated_env: Path) -> None:
    rng = random.Random(27)
    client = RawClient(ws, isolated_env)
    try:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "torture", "version": "1"},
        }
        assert client.ask(request(0, "initialize", hello))["id"] == 0
        client.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        slowest = 0.0
        for n in range(1, 301):
            if n % 10 == 0:  # a good request now and then, on the same connection
                search = {"name": "memory_search", "arguments": {"query": "walrus dawn"}}
                reply = client.ask(request(n, "tools/call", search))
                found = json.loads(reply["result"]["content"][0]["text"])
                assert reply["id"] == n and found["results"]
                continue
            if n % 7 == 0:  # garbage that is not JSON at all
                line = b"x" + bytes(rng.randrange(0x20, 0x100) for _ in range(40))
                expected_id, codes = None, {types.PARSE_ERROR}
            else:
                line, code = corrupt(rng, n)
                expected_id, codes = n, {code}
            started = time.monotonic()
            reply = client.ask(line, timeout=20)
            slowest = max(slowest, time.monotonic() - started)
            assert reply["id"] == expected_id and reply["error"]["code"] in codes, (line, reply)
            TALLY["MCP request lines that could not be read, answered"] += 1
        assert slowest < 10
        assert client.close() == 0
    finally:
        if client.process.poll() is None:
            client.process.kill()
            client.process.wait()
    # Nothing a refused write carried reached the notes.
    assert b"\xef\xbf\xbd" not in b"".join(p.read_bytes() for p in (ws / "memory").glob("*.md"))


# -- 2. a read-only workspace ----------------------------------------------------------------


def check_reads_work(prefix: list[str], ws: Path) -> None:
    for args in (("get", "MEMORY.md"), ("status",), ("forget", FACT), ("dream",), ("review",)):
        result = run_cli(prefix, ws, *args)
        assert result.returncode == 0, (args, result.stderr)


def test_a_read_only_mount_refuses_every_writer(ws: Path, isolated_env: Path) -> None:
    prefix = read_only_mount(ws)
    check_every_writer_refuses(prefix, ws, "on a read-only file system")
    check_mcp_write_refused(prefix, ws, isolated_env)
    check_reads_work(prefix, ws)
    TALLY["writers refused on a read-only workspace"] += len(WRITERS) + 1


def test_a_workspace_made_read_only_refuses_every_writer(ws: Path, isolated_env: Path) -> None:
    prefix = as_owner_only()
    folders = [ws, *(p for p in ws.rglob("*") if p.is_dir())]
    for folder in folders:
        folder.chmod(0o555)
    try:
        check_every_writer_refuses(prefix, ws, f"{ws} is not writable (mode 0555)")
        check_mcp_write_refused(prefix, ws, isolated_env)
        check_reads_work(prefix, ws)
    finally:
        for folder in folders:
            folder.chmod(0o755)
    TALLY["writers refused on a read-only workspace"] += len(WRITERS) + 1


# -- 3. files made read-only ---------------------------------------------------------------------


def test_read_only_files_are_left_alone_by_the_cli(ws: Path) -> None:
    memory_md = ws / "MEMORY.md"
    log = next(p for p in (ws / "memory").glob("*.md") if p.name != "2026-11-28.md")
    for path in (memory_md, log):
        path.chmod(0o444)
    before = snapshot(ws, state=False)
    cases = [
        (("remember", "-s", "facts", "The heron nests by the pond"), memory_md),
        (("remember", "The heron nests by the pond"), log),
        (("forget", FACT, "--apply", "--force"), None),
        (("dream", "--apply"), memory_md),
    ]
    for args, named in cases:
        result = run_cli([], ws, *args)
        assert result.returncode == 1, (args, result.stdout)
        error = result.stderr.strip()
        assert re.search(r"is read-only \(mode 0444\)", error) and "internal error" not in error
        if named is not None:
            assert str(named) in error, (args, error)
        TALLY["writes refused on files made read-only"] += 1
    assert snapshot(ws, state=False) == before
    assert all(p.stat().st_mode & 0o777 == 0o444 for p in (memory_md, log))


# -- 4 and 5. the inspector ----------------------------------------------------------------------


def test_the_url_printed_for_127_0_0_2_answers(ws: Path) -> None:
    write(ws, ".memdir/config.toml", '[embedding]\nprovider = "fake"\n')
    try:
        ui = start_ui(ws, dict(os.environ), "--host", "127.0.0.2")
    except AssertionError as exc:
        if "cannot listen on 127.0.0.2" in str(exc):
            pytest.skip("127.0.0.2 cannot be bound here")
        raise
    try:
        assert ui.url.startswith("http://127.0.0.2:")
        with httpx.Client(timeout=60, follow_redirects=True) as http:
            assert http.get(ui.url).status_code == 200  # the sign-in link
            for path in ("", "search?q=walrus", "files", "files/MEMORY.md", "index", "history"):
                page = http.get(ui.base + path)
                assert page.status_code == 200, (path, page.text[:200])
        port = urlsplit(ui.url).port
        for host in ("127.0.0.3", "localhost.evil.example", "127.0.0.2.nip.io"):
            refused = httpx.get(ui.base, headers={"Host": f"{host}:{port}"}, timeout=30)
            assert refused.status_code == 400
    finally:
        stop_ui(ui)


def test_no_request_path_redirects_off_site(ws: Path) -> None:
    write(ws, ".memdir/config.toml", '[embedding]\nprovider = "fake"\n')
    # A fixed token, good for every request (a printed sign-in code works once).
    env = {**os.environ, "MEMDIR_UI_TOKEN": "redirect-probe-token-0123456789"}
    ui = start_ui(ws, env, "--host", "0.0.0.0", "--allow-remote")
    try:
        token = ui.url.split("?token=", 1)[1]
        local = ui.url.replace("0.0.0.0", "127.0.0.1").split("?", 1)[0]
        with Memory(ws, embedder=FakeEmbedder()) as memory:
            routes = [r.path.replace("{path:path}", "MEMORY.md") for r in create_app(memory).routes]
        prefixes = [
            "",
            "/",
            "//evil.example",
            "///evil.example",
            "/\\evil.example",
            "/%2F%2Fevil.example",
            "/%5Cevil.example",
            "//evil.example:80",
        ]
        checked = 0
        for route in [*routes, "/static/memdir.css"]:
            for prefix in prefixes:
                for suffix in ("", "/"):
                    target = f"{prefix}{route}{suffix}?token={token}&q=x"
                    status, headers = raw_get(local, target)
                    if 300 <= status < 400:
                        location = headers["location"]
                        parts = urlsplit(location)
                        assert not parts.scheme and not parts.netloc, (target, location)
                        assert location.startswith("/") and location[1:2] not in ("/", "\\")
                        checked += 1
        assert checked >= len(routes) * len(prefixes)
        TALLY["inspector redirects checked (none left its origin)"] += checked
    finally:
        stop_ui(ui)
