"""The MCP server's limits (issue 14): replies capped with a way to read on, per-call time
limits, and a lock that one slow call cannot hold for everyone."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from memdir.errors import MemdirError, PathNotAllowed
from memdir.mcp.server import MAX_REPLY_CHARS, MemoryTools, cap_reply
from memdir.tools import MAX_GET_CHARS
from tests.helpers import write


def test_a_big_get_is_capped_and_can_be_read_on(memory, workspace) -> None:
    lines = [f"line {n} " + "x" * 70 for n in range(1, 20_001)]
    write(workspace, "memory/big.md", "\n".join(lines) + "\n")
    tools = MemoryTools(memory)
    first = tools.call("memory_get", {"path": "memory/big.md"})
    assert len(first["text"]) <= MAX_GET_CHARS and first["truncated"] is True
    assert first["next_from"] == first["lines"] + 1
    assert f'"from": {first["next_from"]}' in first["note"]
    second = tools.call("memory_get", {"path": "memory/big.md", "from": first["next_from"]})
    joined = first["text"] + "\n" + second["text"]
    assert joined.splitlines() == lines[: len(joined.splitlines())]


def test_a_small_get_is_untouched(memory, workspace) -> None:
    write(workspace, "memory/small.md", "one\ntwo\n")
    reply = MemoryTools(memory).call("memory_get", {"path": "memory/small.md"})
    assert reply["text"] == "one\ntwo" and reply["lines"] == 2 and "truncated" not in reply


def test_search_replies_are_capped() -> None:
    data = {"results": [{"snippet": "s" * 5_000} for _ in range(40)], "warnings": []}
    capped = cap_reply("memory_search", data)
    assert len(json.dumps(capped)) <= MAX_REPLY_CHARS
    assert 0 < len(capped["results"]) < 40 and capped["truncated"] is True
    assert "max_results" in capped["note"]


def test_a_fifo_get_fails_fast_and_the_rest_keeps_working(memory, workspace) -> None:
    os.mkfifo(workspace / "memory" / "x.md")
    write(workspace, "memory/ok.md", "# ok\nthe walrus sings\n")
    tools = MemoryTools(memory, timeout=10)
    with pytest.raises(PathNotAllowed, match="FIFO"):
        tools.call("memory_get", {"path": "memory/x.md"})
    assert tools.call("memory_search", {"query": "walrus"})["results"]


def test_a_slow_call_times_out_and_does_not_stall_reads(memory, workspace, monkeypatch) -> None:
    write(workspace, "memory/ok.md", "# ok\nthe walrus sings\n")
    release = threading.Event()
    real_search = memory.search

    def slow_search(*args, **kwargs):  # type: ignore[no-untyped-def]
        release.wait(20)
        return real_search(*args, **kwargs)

    monkeypatch.setattr(memory, "search", slow_search)
    tools = MemoryTools(memory, timeout=0.5)
    with pytest.raises(MemdirError, match="took longer than"):
        tools.call("memory_search", {"query": "walrus"})
    # The slow search still holds the index lock: a read of a file does not need it...
    assert tools.call("memory_get", {"path": "memory/ok.md"})["text"]
    # ...and the next index calls go on with a fresh memory of the same workspace (before,
    # every later call answered "busy" for the server's whole life).
    assert tools.memory is not memory
    started = time.monotonic()
    assert tools.call("memory_write", {"text": "The heron nests by the pond"})["written"]
    assert tools.call("memory_search", {"query": "heron pond"})["results"]
    assert time.monotonic() - started < 10
    release.set()
    # Let the timed-out search finish before the fixture closes the index under it (closing a
    # SQLite connection another thread is using can crash the interpreter).
    for thread in threading.enumerate():
        if thread.name.startswith("memdir memory_"):  # the abandoned search
            thread.join(30)
    tools.memory.close()


def test_resources_are_capped(memory, workspace) -> None:
    write(workspace, "MEMORY.md", "# memory\n" + ("- a long remembered fact " * 4 + "\n") * 5000)
    text = MemoryTools(memory).read_resource("memory://MEMORY.md")
    assert len(text) < MAX_GET_CHARS + 300 and "read on with memory_get" in text


def test_the_real_server_survives_a_fifo(tmp_path, isolated_env) -> None:
    """Over stdio, as the probe ran it: a FIFO get fails at once and later calls still work."""
    import anyio

    from memdir import init_workspace
    from tests.test_mcp_server import call, session

    (isolated_env / "config.toml").write_text('[embedding]\nprovider = "fake"\n', encoding="utf-8")
    root, _ = init_workspace(tmp_path / "ws")
    write(root, "memory/ok.md", "# ok\nthe walrus sings\n")
    os.mkfifo(root / "memory" / "x.md")

    async def main() -> None:
        async with session(root, isolated_env) as client:
            with anyio.fail_after(60):
                is_error, message = await call(client, "memory_get", path="memory/x.md")
                assert is_error and "FIFO" in message
                is_error, data = await call(client, "memory_search", query="walrus")
                assert not is_error and data["results"]
                is_error, data = await call(client, "memory_get", path="memory/ok.md")
                assert not is_error and "walrus" in data["text"]

    anyio.run(main)
