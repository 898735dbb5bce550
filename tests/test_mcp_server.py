"""``memdir serve`` end to end: a real server subprocess driven by the MCP SDK's stdio client."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, MCPError
from mcp.client.stdio import StdioServerParameters, stdio_client

from memdir import init_workspace
from tests.helpers import write
from tests.test_watch import wait_until_indexed

TODAY = "2026-11-30"
SECRET = "The vault combination is 4711 and the vault sits behind the zebra painting."


@pytest.fixture
def ws(tmp_path: Path, isolated_env: Path) -> Path:
    (isolated_env / "config.toml").write_text('[embedding]\nprovider = "fake"\n', encoding="utf-8")
    root, _ = init_workspace(tmp_path / "ws", "en")
    write(root, "memory/2026-11-28.md", "# 2026-11-28\n- Redis cache moved to port 6380.\n")
    memory_md = (root / "MEMORY.md").read_text(encoding="utf-8")
    (root / "MEMORY.md").write_text(
        memory_md.replace("## Project facts\n", f"## Project facts\n- {SECRET}\n"),
        encoding="utf-8",
    )
    return root


def _params(root: Path, home: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "memdir", "--workspace", str(root), "serve", *extra],
        env={
            "MEMDIR_HOME": str(home),
            "MEMDIR_NOW": f"{TODAY}T09:00:00",
            "PATH": os.environ.get("PATH", ""),
        },
    )


@asynccontextmanager
async def session(root: Path, home: Path, *extra: str) -> AsyncIterator[ClientSession]:
    with (home / "server-stderr.log").open("w") as errlog:
        async with (
            stdio_client(_params(root, home, *extra), errlog=errlog) as (read, write_),
            ClientSession(read, write_) as client,
        ):
            await client.initialize()
            yield client


def run(fn: Callable[[], Awaitable[None]]) -> None:
    anyio.run(fn)


async def call(client: ClientSession, name: str, **arguments: Any) -> tuple[bool, Any]:
    """(is_error, parsed JSON result or the error message)."""
    result = await client.call_tool(name, arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    if result.is_error:
        return True, text
    assert result.structured_content is None and len(result.content) == 1  # one body
    return False, json.loads(text)


def test_tools_are_listed_with_schemas_and_annotations(ws: Path, isolated_env: Path) -> None:
    async def main() -> None:
        async with session(ws, isolated_env) as client:
            info = client.initialize_result
            assert info is not None and info.server_info.name == "memdir"
            assert "memory_search" in (info.instructions or "")
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == {"memory_search", "memory_get", "memory_write", "memory_forget"}
            search, get, write_ = tools["memory_search"], tools["memory_get"], tools["memory_write"]
            assert search.input_schema["required"] == ["query"]
            assert set(search.input_schema["properties"]) == {
                "query",
                "queries",
                "variants",
                "max_results",
                "min_score",
            }
            assert set(get.input_schema["properties"]) == {"path", "from", "lines", "copy"}
            assert write_.input_schema["properties"]["section"]["enum"] == [
                "preferences",
                "decisions",
                "lessons",
                "facts",
                "todos",
            ]
            assert "before answering" in (search.description or "").lower()
            # The descriptions state this server's configuration (the defaults here).
            assert "up to 6 snippets" in (search.description or "")
            assert search.input_schema["properties"]["max_results"]["maximum"] == 50
            for tool in (search, get):
                assert tool.annotations is not None and tool.annotations.read_only_hint is True
            assert write_.annotations is not None
            assert write_.annotations.read_only_hint is False
            assert write_.annotations.destructive_hint is False
            assert write_.annotations.idempotent_hint is False
            forget = tools["memory_forget"]
            assert forget.annotations is not None and forget.annotations.destructive_hint is True
            assert forget.input_schema["properties"]["apply"]["type"] == "boolean"

    run(main)


def test_memory_forget_previews_then_removes(ws: Path, isolated_env: Path) -> None:
    async def main() -> None:
        async with session(ws, isolated_env) as client:
            error, written = await call(
                client, "memory_write", text="The build cache lives on ci-7"
            )
            assert not error
            place = written["citation"]
            error, preview = await call(client, "memory_forget", target=place)
            assert not error and not preview["applied"]
            assert [x["generated"] for x in preview["lines"]] == [True]
            error, done = await call(client, "memory_forget", target=place, apply=True)
            assert not error and [x["citation"] for x in done["removed"]] == [place]
            # The person's line (the Redis note was written by hand) needs force.
            error, kept = await call(
                client, "memory_forget", target="memory/2026-11-28.md#L2", apply=True
            )
            assert not error and kept["removed"] == [] and len(kept["refused"]) == 1
            error, message = await call(client, "memory_forget", target=place, apply="yes")
            assert error and "true or false" in message
        async with session(ws, isolated_env, "--scope", "shared") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert "memory_forget" not in names
            error, message = await call(client, "memory_forget", target="memory/2026-11-28.md#L2")
            assert error and "unknown tool" in message

    run(main)


def test_every_tool_answers_and_errors_are_tool_errors(ws: Path, isolated_env: Path) -> None:
    write(ws, "memory/export.md", "".join(f"- exported line {n}\n" for n in range(1, 30_001)))
    (ws / "memory" / "blob.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00" + bytes(300_000))

    async def main() -> None:
        async with session(ws, isolated_env) as client:
            error, data = await call(client, "memory_search", query="redis port", max_results=3)
            assert not error
            assert data["results"][0]["path"] == "memory/2026-11-28.md"
            hit = data["results"][0]
            assert set(hit) >= {"path", "start_line", "end_line", "score", "snippet", "citation"}
            cited = re.fullmatch(r"(.+)#L(\d+)-L(\d+)", hit["citation"])
            assert cited is not None and cited.group(1) == hit["path"]
            assert (
                hit["start_line"] <= int(cited.group(2)) <= int(cited.group(3)) <= hit["end_line"]
            )
            assert data["index"]["files"] >= 2

            error, data = await call(client, "memory_get", path="memory/2026-11-28.md", lines=1)
            assert not error and data["text"] == "# 2026-11-28" and data["total_lines"] == 2
            error, data = await call(client, "memory_get", path="memory/2020-01-01.md")
            assert not error and data == {**data, "text": "", "exists": False}

            # One call returns a page, and says how to read on; a binary file is refused.
            error, data = await call(client, "memory_get", path="memory/export.md")
            assert not error and data["lines"] == 400 and data["total_lines"] == 30_000
            assert data["truncated"] is True and data["next_from"] == 401
            assert '"from": 401' in data["note"]
            error, message = await call(client, "memory_get", path="memory/blob.md")
            assert error and "binary file" in message

            error, data = await call(client, "memory_search", query="")
            assert not error and data["results"] == []

            for name, args, expected in [
                ("memory_get", {"path": "../secret.md"}, "'..' is not allowed"),
                ("memory_get", {"path": "memory/x.md", "from": 0}, "1 or more"),
                ("memory_get", {}, "missing argument 'path'"),
                ("memory_search", {"query": 42}, "must be a string"),
                ("memory_search", {"query": "x", "colour": "red"}, "unknown argument"),
                ("memory_write", {"text": "x" * 2001}, "the limit is 2000"),
                ("memory_write", {"text": "  \n "}, "empty"),
                ("memory_write", {"text": "x", "section": "gossip"}, "unknown section"),
                ("nonsense_tool", {}, "unknown tool"),
            ]:
                error, message = await call(client, name, **args)
                assert error, (name, args, message)
                assert expected in message and "\n" not in message

            # The server is still alive and well after all those errors.
            error, data = await call(client, "memory_write", text="Fresh fact about kiwis.")
            assert not error and data["written"] is True

    run(main)


def test_write_then_search_round_trip_and_resources(ws: Path, isolated_env: Path) -> None:
    fact = "The billing service deploys every Friday at 17:00 with Helm."

    async def main() -> None:
        async with session(ws, isolated_env) as client:
            error, data = await call(client, "memory_write", text=fact)
            assert not error, data
            assert data == {**data, "path": f"memory/{TODAY}.md", "line": 3, "written": True}
            error, data = await call(client, "memory_search", query="billing deploy friday")
            assert not error and data["results"], data
            assert data["results"][0]["path"] == f"memory/{TODAY}.md"
            assert "17:00" in data["results"][0]["snippet"]

            error, again = await call(client, "memory_write", text=fact.upper())
            assert not error and again["written"] is False and "line 3" in again["reason"]

            error, data = await call(
                client,
                "memory_write",
                text="Prefers answers in British English",
                section="preferences",
            )
            assert not error and data["path"] == "MEMORY.md" and data["written"]
            error, found = await call(client, "memory_search", query="British English answers")
            assert found["results"][0]["path"] == "MEMORY.md"

            uris = {str(r.uri) for r in (await client.list_resources()).resources}
            assert uris == {"memory://MEMORY.md", "memory://today"}
            today = await client.read_resource("memory://today")
            assert fact in today.contents[0].text  # type: ignore[union-attr]
            memory_md = await client.read_resource("memory://MEMORY.md")
            assert "British English" in memory_md.contents[0].text  # type: ignore[union-attr]

            # The server's file watcher indexes a file written behind its back, with no search.
            write(ws, "memory/topics.md", "# Topics\n- quokkas are marsupials\n")
            assert wait_until_indexed(ws, "memory/topics.md", seconds=10)

    run(main)


def test_shared_scope_never_leaks_memory_md(ws: Path, isolated_env: Path) -> None:
    before = (ws / "MEMORY.md").read_bytes()

    async def main() -> None:
        async with session(ws, isolated_env, "--scope", "shared") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert "section" not in tools["memory_write"].input_schema["properties"]

            error, data = await call(client, "memory_search", query="vault combination zebra")
            assert not error
            assert all(r["path"] != "MEMORY.md" for r in data["results"])
            assert "4711" not in json.dumps(data)

            for path in ("MEMORY.md", "USER.md", str(ws / "MEMORY.md")):
                error, message = await call(client, "memory_get", path=path)
                assert error and "4711" not in message

            error, message = await call(
                client, "memory_write", text="Leak attempt", section="facts"
            )
            assert error and "shared" in message
            error, message = await call(client, "memory_write", text="x", target="memory")
            assert error

            uris = {str(r.uri) for r in (await client.list_resources()).resources}
            assert uris == {"memory://today"}
            with pytest.raises(MCPError, match="shared"):
                await client.read_resource("memory://MEMORY.md")

            # The daily log still works in a shared session.
            error, data = await call(client, "memory_write", text="Group call about the roadmap")
            assert not error and data["path"] == f"memory/{TODAY}.md"

    run(main)
    assert (ws / "MEMORY.md").read_bytes() == before
