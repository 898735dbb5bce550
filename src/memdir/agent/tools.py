"""Tool calls in the chat agent: the text protocol's JSON line, and running any call.

The tools themselves (names, descriptions, schemas, limits, how a call runs) are the contract
of :mod:`memdir.tools`, shared with the MCP server; :func:`tool_definitions` gives them for the
agent's configuration and scope, for native tool calling and for the prompt.

Without native tool calling, the chat prompt tells the model to ask for a tool by replying with
one line that holds only ``{"tool": "memory_search", "args": {"query": "redis port"}}``.
:func:`find_tool_request` spots that line in a reply; :func:`run_tool` runs it (or a native
call) and returns the result, which the loop sends back as a ``tool`` message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memdir.errors import MemdirError
from memdir.memory.facade import Memory
from memdir.safety.untrusted import escape_untrusted
from memdir.tools import ToolSpec, call_tool, memory_tools

TOOL_RESULT_PREFIX = "[tool result]"


@dataclass(frozen=True)
class ToolRequest:
    """A tool call found in a reply.

    Attributes:
        name: the tool asked for.
        args: its arguments.
        line: the reply line that held the request.
        before: the reply's text before that line (what the model said first).
        error: why the request cannot be run as it is (bad JSON, arguments not an object).
    """

    name: str
    args: dict[str, Any]
    line: str
    before: str = ""
    error: str | None = None


def find_tool_request(reply: str) -> ToolRequest | None:
    """The first line of ``reply`` that is a JSON tool request, or None.

    A line that starts like a request but is not valid JSON gives a request with ``error`` set,
    so the model can be told what was wrong.
    """
    lines = reply.splitlines()
    for n, raw in enumerate(lines):
        line = raw.strip().strip("`").strip()
        if not (line.startswith("{") and '"tool"' in line):
            continue
        before = "\n".join(lines[:n]).strip().removesuffix("```json").removesuffix("```").strip()
        try:
            data = json.loads(line)
        except ValueError as exc:
            return ToolRequest("", {}, line, before, error=f"the request is not valid JSON ({exc})")
        if not isinstance(data, dict) or not isinstance(data.get("tool"), str):
            continue
        args = data.get("args", {})
        if args is None:
            args = {}
        if not isinstance(args, dict):
            return ToolRequest(data["tool"], {}, line, before, error='"args" must be an object')
        return ToolRequest(data["tool"], args, line, before)
    return None


def run_tool(memory: Memory, request: ToolRequest) -> dict[str, Any]:
    """Run ``request`` on ``memory``; the result, or ``{"error": "..."}``, as a JSON object.

    Never raises for a bad request or a memdir error: the model is told what went wrong.
    """
    if request.error:
        return {"error": request.error}
    try:
        return call_tool(memory, request.name, request.args, via=f"chat {request.name}")
    except MemdirError as exc:
        return {"error": str(exc)}


def tool_definitions(memory: Memory) -> tuple[ToolSpec, ...]:
    """The memory tools for an agent on ``memory``: its ``[search]`` settings and its scope."""
    return memory_tools(
        memory.config.search,
        private=memory.scope == "private",
        calibrated=memory.calibration is not None,
    )


def tool_message(name: str, result: Mapping[str, Any]) -> str:
    """The text of the ``tool`` message that carries ``result`` back to the model (text
    protocol)."""
    return f"{TOOL_RESULT_PREFIX} {name}\n{tool_content(result)}"


def tool_content(result: Mapping[str, Any]) -> str:
    """``result`` as the JSON the model reads, every string in it escaped as memory text
    (:func:`~memdir.safety.untrusted.escape_untrusted`): a snippet or a file name that
    ``memory_search`` or ``memory_get`` brings back cannot forge a tag in the conversation, in
    the memory flush or in the transcript a compaction reads. It stays valid JSON."""
    return json.dumps(_escaped(result), ensure_ascii=False)


def _escaped(value: Any) -> Any:
    if isinstance(value, str):
        return escape_untrusted(value)
    if isinstance(value, Mapping):
        return {key: _escaped(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_escaped(item) for item in value]
    return value


def describe_result(name: str, result: Mapping[str, Any]) -> str:
    """One short line about a tool result, for the terminal."""
    if "error" in result:
        return f"{name}: error: {result['error']}"
    if name == "memory_search":
        hits = result.get("results", [])
        cited = ", ".join(h["citation"] for h in hits[:3])
        return f"{name}: {len(hits)} result(s)" + (f" ({cited})" if cited else "")
    if name == "memory_get":
        return f"{name}: {result.get('path')} ({result.get('lines', 0)} lines)"
    return f"{name}: {result.get('reason', '')}"
