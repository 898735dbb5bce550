"""Running a tool call: argument checks from the schema, and memory_get's caps."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdir import Memory
from memdir.config.settings import SearchConfig
from memdir.errors import MemdirError, PathNotAllowed
from memdir.tools import MAX_GET_CHARS, MAX_GET_LINES, call_tool, memory_tools, read_capped
from memdir.tools.calls import checked_arguments
from tests.helpers import write

SPECS = {s.name: s for s in memory_tools(SearchConfig(), private=True)}


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("memory_search", {}, "missing argument 'query'"),
        ("memory_search", {"query": 3}, "'query' must be a string, not int"),
        ("memory_search", {"query": "x", "max_results": True}, "must be an integer, not bool"),
        ("memory_search", {"query": "x", "max_results": 2.5}, "must be an integer, not float"),
        ("memory_search", {"query": "x", "max_results": 0}, "'max_results' must be 1 or more"),
        ("memory_search", {"query": "x", "min_score": 1.5}, "'min_score' must be at most 1"),
        ("memory_search", {"query": "x" * 4001}, "4,001 characters; the limit is 4000"),
        ("memory_search", {"query": "x", "k": 3}, "unknown argument(s) k; accepted: query"),
        ("memory_search", {"query": "x", "queries": "y"}, "must be a list of strings, not str"),
        ("memory_search", {"query": "x", "queries": ["y", 2]}, "'queries[1]' must be a string"),
        ("memory_search", {"query": "x", "queries": ["q"] * 8}, "8 items; the limit is 7"),
        ("memory_get", {"path": "m.md", "from": 0}, "'from' must be 1 or more"),
        ("memory_write", {"text": "x", "section": "gossip"}, "unknown section 'gossip'"),
        ("memory_write", {"text": "x", "target": "elsewhere"}, "unknown target 'elsewhere'"),
    ],
)
def test_arguments_are_checked_against_the_schema(name: str, args: dict, message: str) -> None:
    with pytest.raises(MemdirError) as info:
        checked_arguments(SPECS[name], args)
    assert message in str(info.value)


def test_whole_numbers_and_numbers_are_normalised() -> None:
    args = checked_arguments(SPECS["memory_search"], {"query": "q", "max_results": 3.0})
    assert args == {"query": "q", "max_results": 3} and isinstance(args["max_results"], int)
    args = checked_arguments(SPECS["memory_search"], {"query": "q", "min_score": 1})
    assert args["min_score"] == 1.0 and isinstance(args["min_score"], float)
    assert checked_arguments(SPECS["memory_get"], {"path": "p", "from": None}) == {"path": "p"}


def test_search_with_several_queries(memory: Memory, workspace: Path) -> None:
    write(workspace, "memory/redis.md", "redis listens on port 6379\n")
    write(workspace, "memory/kafka.md", "kafka topic orders has 12 partitions\n")
    reply = call_tool(
        memory,
        "memory_search",
        {"query": "redis port", "queries": ["kafka partitions"], "min_score": 0.0},
        via="test",
    )
    assert reply["queries"] == ["redis port", "kafka partitions"]
    assert {"memory/redis.md", "memory/kafka.md"} <= {r["path"] for r in reply["results"]}


def test_unknown_tool(memory: Memory) -> None:
    with pytest.raises(MemdirError, match="unknown tool 'shell': use memory_search"):
        call_tool(memory, "shell", {}, via="test")


def test_get_pages_a_long_file_and_says_how_to_read_on(memory: Memory, workspace: Path) -> None:
    write(workspace, "memory/long.md", "".join(f"line {n}\n" for n in range(1, 1001)))
    first = call_tool(memory, "memory_get", {"path": "memory/long.md"}, via="test")
    assert first["lines"] == MAX_GET_LINES == 400 and first["total_lines"] == 1000
    assert first["text"].split("\n")[-1] == "line 400"
    assert first["truncated"] is True and first["next_from"] == 401
    assert "memory/long.md has 1,000 lines; showing lines 1-400" in first["note"]
    assert '"from": 401' in first["note"]
    second = read_capped(memory, "memory/long.md", from_line=first["next_from"])
    assert second["text"].split("\n")[0] == "line 401" and second["next_from"] == 801
    last = read_capped(memory, "memory/long.md", from_line=801)
    assert last["lines"] == 200 and "truncated" not in last and "note" not in last
    asked = read_capped(memory, "memory/long.md", from_line=10, lines=5)
    assert (
        asked["text"] == "line 10\nline 11\nline 12\nline 13\nline 14" and "truncated" not in asked
    )
    too_many = read_capped(memory, "memory/long.md", lines=1000)
    assert too_many["lines"] == 400 and too_many["next_from"] == 401


def test_get_caps_characters_at_a_whole_line(memory: Memory, workspace: Path) -> None:
    line = "y" * 499
    write(workspace, "memory/wide.md", (line + "\n") * 50)
    got = read_capped(memory, "memory/wide.md")
    assert len(got["text"]) <= MAX_GET_CHARS
    assert got["lines"] == 20 and got["text"].split("\n") == [line] * 20
    assert got["next_from"] == 21 and got["truncated"] is True


def test_a_line_longer_than_the_cap_is_cut_and_said(memory: Memory, workspace: Path) -> None:
    write(workspace, "memory/one.md", "z" * 5_288_135 + "\nafter\n")
    got = read_capped(memory, "memory/one.md")
    assert len(got["text"]) == MAX_GET_CHARS
    assert got["next_from"] == 2 and "line 1 only, cut" in got["note"]
    assert read_capped(memory, "memory/one.md", from_line=2)["text"] == "after"


def test_get_of_a_small_or_missing_file_is_whole(memory: Memory, workspace: Path) -> None:
    write(workspace, "memory/small.md", "# Small\n- one\n")
    got = read_capped(memory, "memory/small.md")
    assert got["text"] == "# Small\n- one" and "truncated" not in got
    missing = read_capped(memory, "memory/none.md")
    assert missing["exists"] is False and missing["text"] == ""


def test_a_binary_file_is_refused_with_the_reason(memory: Memory, workspace: Path) -> None:
    (workspace / "memory" / "blob.md").write_bytes(b"PK\x03\x04\x00\x00" + bytes(range(256)) * 1000)
    with pytest.raises(PathNotAllowed, match=r"binary file .*NUL bytes.*not a Markdown note"):
        call_tool(memory, "memory_get", {"path": "memory/blob.md"}, via="test")
    with pytest.raises(PathNotAllowed, match="binary file"):
        memory.get("memory/blob.md")
    report = memory.sync()
    assert any("binary" in w for w in report.warnings)  # the indexer's verdict is the same
    random_bytes = bytes((n * 7919 + 13) % 256 or 1 for n in range(20_000))  # no NUL
    (workspace / "memory" / "noise.md").write_bytes(random_bytes)
    with pytest.raises(PathNotAllowed, match=r"binary-like .*not a Markdown note"):
        memory.get("memory/noise.md")


def test_memory_forget_must_be_offered(memory: Memory) -> None:
    from memdir.tools import FORGET_TOOL, TOOL_NAMES, call_tool

    result = memory.write("The build cache lives on ci-7")
    with pytest.raises(MemdirError, match="unknown tool"):
        call_tool(memory, FORGET_TOOL, {"target": result.citation}, via="chat memory_forget")
    offered = (*TOOL_NAMES, FORGET_TOOL)
    done = call_tool(
        memory, FORGET_TOOL, {"target": result.citation, "apply": True}, via="t", offered=offered
    )
    assert [x["citation"] for x in done["removed"]] == [result.citation]
