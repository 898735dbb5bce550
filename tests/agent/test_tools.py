"""Provider-neutral tool calls: finding the JSON request line and running it on Memory."""

from __future__ import annotations

import json

import pytest

from memdir import Memory
from memdir.agent.tools import (
    describe_result,
    find_tool_request,
    run_tool,
    tool_definitions,
    tool_message,
)
from memdir.tools import MAX_GET_CHARS
from tests.helpers import write


def test_find_tool_request_on_its_own_line():
    reply = 'Let me look.\n{"tool": "memory_search", "args": {"query": "redis port"}}'
    request = find_tool_request(reply)
    assert request is not None
    assert (request.name, request.args, request.before) == (
        "memory_search",
        {"query": "redis port"},
        "Let me look.",
    )
    fenced = '```json\n{"tool": "memory_get", "args": {"path": "MEMORY.md"}}\n```'
    assert find_tool_request(fenced).name == "memory_get"
    assert find_tool_request('{"tool": "memory_get"}').args == {}


@pytest.mark.parametrize(
    "reply",
    ["Just an answer.", 'Use {"tool": "x"} inline like this.', '{"name": "memory_search"}', ""],
)
def test_no_request(reply):
    assert find_tool_request(reply) is None


def test_bad_requests_carry_an_error():
    broken = find_tool_request('{"tool": "memory_search", "args": {"query": }')
    assert broken is not None and "not valid JSON" in (broken.error or "")
    wrong_args = find_tool_request('{"tool": "memory_search", "args": ["redis"]}')
    assert wrong_args is not None and wrong_args.error == '"args" must be an object'


def run(memory, line):
    return run_tool(memory, find_tool_request(line))


def test_search_get_and_write(memory, workspace):
    written = run(memory, '{"tool": "memory_write", "args": {"text": "Redis listens on 6380."}}')
    assert written["written"] and written["path"].startswith("memory/")
    hits = run(memory, '{"tool": "memory_search", "args": {"query": "redis", "max_results": 2}}')
    assert hits["results"][0]["citation"].startswith(written["path"])
    got = run(memory, json.dumps({"tool": "memory_get", "args": {"path": written["path"]}}))
    assert "Redis listens on 6380." in got["text"]
    section = run(
        memory,
        '{"tool": "memory_write", "args": {"text": "Prefers tea.", "section": "preferences"}}',
    )
    assert section["path"] == "MEMORY.md" and section["written"]
    assert describe_result("memory_search", hits).startswith("memory_search: 1 result(s)")


def test_long_files_are_cut_with_a_note_on_reading_on(memory, workspace):
    write(workspace, "memory/big.md", "x" * (MAX_GET_CHARS + 500) + "\nsecond line\n")
    got = run(memory, '{"tool": "memory_get", "args": {"path": "memory/big.md"}}')
    assert len(got["text"]) == MAX_GET_CHARS and got["truncated"] is True
    assert got["next_from"] == 2 and '"from": 2' in got["note"]


def test_the_agent_offers_the_contract_for_its_config_and_scope(workspace, fake_embedder):
    with Memory(workspace, embedder=fake_embedder) as mem:
        search, _, write_ = tool_definitions(mem)
        assert "up to 6 snippets" in search.description
        assert "section" in write_.input_schema["properties"]
    with Memory(workspace, embedder=fake_embedder, scope="shared") as shared:
        _, _, write_ = tool_definitions(shared)
        assert "section" not in write_.input_schema["properties"]


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ('{"tool": "shell", "args": {"cmd": "ls"}}', "unknown tool 'shell'"),
        ('{"tool": "memory_search", "args": {}}', "missing argument 'query'"),
        ('{"tool": "memory_search", "args": {"query": "x", "k": 1}}', "unknown argument(s) k"),
        ('{"tool": "memory_search", "args": {"query": "x", "max_results": 0}}', "1 or more"),
        ('{"tool": "memory_search", "args": {"query": "x", "max_results": 51}}', "at most 50"),
        ('{"tool": "memory_get", "args": {"path": "../etc/passwd.md"}}', "'..' is not allowed"),
        ('{"tool": "memory_get", "args": {"path": "AGENTS.md"}}', "only MEMORY.md"),
        ('{"tool": "memory_write", "args": {"text": "x", "section": "gossip"}}', "unknown section"),
    ],
)
def test_errors_are_returned_not_raised(memory, line, error):
    result = run(memory, line)
    assert error in result["error"]
    assert describe_result("x", result).startswith("x: error:")


def test_shared_session_cannot_write_memory_md(workspace, fake_embedder):
    with Memory(workspace, embedder=fake_embedder, scope="shared") as shared:
        line = '{"tool": "memory_write", "args": {"text": "x y z", "section": "facts"}}'
        assert "shared session" in run(shared, line)["error"]
        got = run(shared, '{"tool": "memory_get", "args": {"path": "MEMORY.md"}}')
        assert "not available in a shared session" in got["error"]


def test_tool_message_format():
    text = tool_message("memory_get", {"path": "MEMORY.md", "text": "ü"})
    assert text.splitlines()[0] == "[tool result] memory_get"
    assert json.loads(text.splitlines()[1])["text"] == "ü"
