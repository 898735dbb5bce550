"""``memdir serve``'s stdio transport (issue 27): every request line gets an answer, even one
the MCP SDK cannot read, and the server serves the next one.

The probe: a raw request holding ``"\\ud800"`` (a lone UTF-16 surrogate, as a JSON escape) got
no reply at all and the client waited 40 s. These tests write raw lines to a real ``memdir
serve`` and read its raw replies; :func:`read_message` is checked on its own too.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from memdir import init_workspace
from memdir.mcp.stdio import encode_message, read_message
from tests.helpers import write

SURROGATE_SEARCH = (
    b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"memory_search",'
    b'"arguments":{"query":"walrus \\ud800"}}}'
)
LATIN1_WRITE = (
    b'{"jsonrpc":"2.0","id":"w-1","method":"tools/call","params":{"name":"memory_write",'
    b'"arguments":{"text":"caf\xe9 au lait is my favourite"}}}'
)


def request(request_id: int | str, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


# -- one line -------------------------------------------------------------------------------


def refusal(line: bytes) -> types.JSONRPCError:
    message, error = read_message(line)
    assert message is None and error is not None
    return error


def test_a_lone_surrogate_is_invalid_params_for_that_request() -> None:
    error = refusal(SURROGATE_SEARCH)
    assert error.id == 7 and error.error.code == types.INVALID_PARAMS
    assert "params.arguments.query holds a lone UTF-16 surrogate" in error.error.message


def test_bytes_that_are_not_utf8_are_a_parse_error_with_the_id() -> None:
    """The SDK read them as U+FFFD: ``memory_write`` stored "caf\ufffd"."""
    error = refusal(LATIN1_WRITE)
    assert error.id == "w-1" and error.error.code == types.PARSE_ERROR
    assert "not UTF-8 (byte 0xe9 at offset" in error.error.message


@pytest.mark.parametrize(
    ("line", "code", "request_id"),
    [
        (b"not json", types.PARSE_ERROR, None),
        (b'{"jsonrpc":"2.0","id":3,"method":', types.PARSE_ERROR, None),
        (b"\xff\xfe{}", types.PARSE_ERROR, None),
        (b"[]", types.INVALID_REQUEST, None),
        (b'{"jsonrpc":"2.0","id":4,"method":"ping","params":[1]}', types.INVALID_REQUEST, 4),
        (b'{"jsonrpc":"1.0","id":5,"method":"ping"}', types.INVALID_REQUEST, 5),
        (b'{"jsonrpc":"2.0","id":6,"method":"p\\udc00ng"}', types.INVALID_REQUEST, 6),
        (b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}', types.INVALID_REQUEST, None),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping","params":{"x":"\\ud800"}}', -32602, None),
        # No method, no result: neither a request nor a response; went unanswered (issue 35).
        (b'{"jsonrpc":"2.0","id":7}', types.INVALID_REQUEST, 7),
        (b'{"jsonrpc":"2.0","id":"x-1","params":{}}', types.INVALID_REQUEST, "x-1"),
        (b'{"jsonrpc":"2.0"}', types.INVALID_REQUEST, None),
    ],
)
def test_what_cannot_be_read_is_answered(line: bytes, code: int, request_id: object) -> None:
    error = refusal(line)
    assert error.error.code == code and error.id == request_id
    # The answer itself is always writable: one line of UTF-8 JSON.
    encoded = encode_message(error)
    assert encoded.endswith(b"\n") and json.loads(encoded.decode("utf-8"))["error"]["code"] == code


@pytest.mark.parametrize(
    "line",
    [
        b"",
        b"   \r\n",
        b'{"jsonrpc":"2.0","method":"notifications/x","params":{"v":"\\ud800"}}',
        b'{"jsonrpc":"2.0","id":9,"result":{"v":"\\ud800"}}',
    ],
)
def test_nothing_answers_a_blank_line_a_notification_or_a_response(line: bytes) -> None:
    assert read_message(line) == (None, None)


def test_good_lines_pass_as_the_sdk_reads_them() -> None:
    message, error = read_message(request(1, "ping") + b"\r\n")
    assert error is None and isinstance(message, types.JSONRPCRequest) and message.id == 1
    pair = '{"jsonrpc":"2.0","id":2,"method":"x","params":{"q":"\\ud83d\\ude00 \u7b14"}}'
    message, error = read_message(pair.encode("utf-8"))
    assert isinstance(message, types.JSONRPCRequest) and message.params == {"q": "\U0001f600 笔"}
    # A client's error response (to a request of the server) is a message, not a refusal.
    message, error = read_message(b'{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"no"}}')
    assert isinstance(message, types.JSONRPCError) and error is None


def test_a_reply_that_is_not_unicode_becomes_an_internal_error() -> None:
    reply = types.JSONRPCResponse(jsonrpc="2.0", id=8, result={"text": "a\ud800b"})
    data = json.loads(encode_message(reply))
    assert data["id"] == 8 and data["error"]["code"] == types.INTERNAL_ERROR


# -- a real server ----------------------------------------------------------------------------


class RawClient:
    """``memdir serve`` as a subprocess, spoken to in raw lines."""

    def __init__(self, root: Path, home: Path) -> None:
        env = {**os.environ, "MEMDIR_HOME": str(home), "MEMDIR_NOW": "2026-11-30T09:00:00"}
        self.stderr = (home / "server-stderr.log").open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "memdir", "--workspace", str(root), "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=env,
        )

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def receive(self, timeout: float = 60) -> dict[str, Any]:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        assert ready, f"no reply within {timeout} s"
        line = self.process.stdout.readline()
        assert line.endswith(b"\n"), line
        reply: dict[str, Any] = json.loads(line.decode("utf-8"))
        return reply

    def ask(self, line: bytes, timeout: float = 60) -> dict[str, Any]:
        self.send(line)
        return self.receive(timeout)

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            return self.process.wait(timeout=30)
        finally:
            self.stderr.close()


@pytest.fixture
def raw_server(tmp_path: Path, isolated_env: Path) -> Iterator[RawClient]:
    (isolated_env / "config.toml").write_text('[embedding]\nprovider = "fake"\n', encoding="utf-8")
    root, _ = init_workspace(tmp_path / "ws", "en")
    write(root, "memory/2026-11-28.md", "# 2026-11-28\n- The walrus sings at dawn.\n")
    client = RawClient(root, isolated_env)
    try:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        }
        assert client.ask(request(0, "initialize", hello))["id"] == 0
        client.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        yield client
    finally:
        if client.process.poll() is None:
            client.process.kill()
            client.process.wait()
        client.stderr.close()


def test_the_server_answers_every_line_and_keeps_serving(raw_server: RawClient) -> None:
    started = time.monotonic()
    reply = raw_server.ask(SURROGATE_SEARCH, timeout=20)
    assert reply["id"] == 7 and reply["error"]["code"] == types.INVALID_PARAMS
    assert "lone UTF-16 surrogate" in reply["error"]["message"]
    reply = raw_server.ask(LATIN1_WRITE, timeout=20)
    assert reply["id"] == "w-1" and reply["error"]["code"] == types.PARSE_ERROR
    reply = raw_server.ask(b"{oops", timeout=20)
    assert reply["id"] is None and reply["error"]["code"] == types.PARSE_ERROR
    reply = raw_server.ask(b'{"jsonrpc":"2.0","id":7}', timeout=20)  # no method (issue 35)
    assert reply["id"] == 7 and reply["error"]["code"] == types.INVALID_REQUEST
    assert time.monotonic() - started < 30
    # The same search without the surrogate, and a write, work on the same connection.
    search = {"name": "memory_search", "arguments": {"query": "walrus dawn"}}
    reply = raw_server.ask(request(8, "tools/call", search))
    assert reply["id"] == 8 and not reply["result"]["isError"]
    assert json.loads(reply["result"]["content"][0]["text"])["results"]
    written = {"name": "memory_write", "arguments": {"text": "café au lait is my favourite"}}
    reply = raw_server.ask(request(9, "tools/call", written))
    assert reply["id"] == 9 and json.loads(reply["result"]["content"][0]["text"])["written"] is True
    assert raw_server.close() == 0


def test_the_wire_is_kept_from_children_and_stray_prints(tmp_path: Path) -> None:
    """While serving, fd 0 reads nothing and fd 1 goes to stderr: a child that reads stdin or
    a ``print`` cannot take a request off the wire or break a reply."""
    script = tmp_path / "serve.py"
    script.write_text(
        "import subprocess, anyio\n"
        "from memdir.mcp.stdio import stdio_transport\n"
        "from mcp.shared.message import SessionMessage\n"
        "import mcp_types as types\n"
        "async def main():\n"
        "    async with stdio_transport() as (read, write):\n"
        "        async for item in read:\n"
        "            print('stray print')\n"
        "            child = subprocess.run(['cat'], capture_output=False, timeout=10)\n"
        "            reply = types.JSONRPCResponse(jsonrpc='2.0', id=item.message.id,\n"
        "                                          result={'child': child.returncode})\n"
        "            await write.send(SessionMessage(reply))\n"
        "        await write.aclose()\n"
        "anyio.run(main)\n",
        encoding="utf-8",
    )
    lines = request(1, "ping") + b"\n" + request(2, "ping") + b"\n"
    done = subprocess.run(
        [sys.executable, str(script)], input=lines, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["id"] for r in replies] == [1, 2]  # `cat` read EOF, not the second request
    assert done.stderr.count(b"stray print") == 2


def test_a_tool_result_is_one_compact_body(raw_server: RawClient) -> None:
    """One result body per call: the reply's JSON once, as text (no ``structuredContent`` copy),
    in at most 0.55 of the tokens the doubled reply took (measured on the same call)."""
    from memdir.llm.base import count_tokens

    search = {"name": "memory_search", "arguments": {"query": "walrus dawn"}}
    result = raw_server.ask(request(3, "tools/call", search))["result"]
    assert "structuredContent" not in result and len(result["content"]) == 1
    data = json.loads(result["content"][0]["text"])
    assert data["results"][0]["citation"].startswith("memory/2026-11-28.md#L")
    doubled = {  # the reply before issue 36: the JSON as text and again as structured content
        "content": [{"type": "text", "text": json.dumps(data, ensure_ascii=False)}],
        "structuredContent": data,
        "isError": False,
    }
    ratio = count_tokens(json.dumps(result)) / count_tokens(json.dumps(doubled))
    assert ratio <= 0.55, ratio
