"""Tool calling without provider support: a JSON request on its own line, run by memdir.

The chat prompt tells the model to ask for a tool by replying with one line that holds only
``{"tool": "memory_search", "args": {"query": "redis port"}}``. :func:`find_tool_request` spots
that line in a reply; :func:`run_tool` runs it on :class:`~memdir.memory.Memory` and returns the
result as JSON text, which the loop sends back as a ``tool`` message. This works the same with
every provider, including ones without native tool calling.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from memdir.errors import MemdirError
from memdir.memory import Memory

TOOL_NAMES = ("memory_search", "memory_get", "memory_write")
#: Tool calls allowed per user message.
MAX_TOOL_CALLS = 4
#: ``memory_get`` text beyond this many characters is cut (ask for a line range instead).
MAX_GET_CHARS = 6_000
MAX_SEARCH_RESULTS = 10
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
    runner = _RUNNERS.get(request.name)
    if runner is None:
        return {"error": f"unknown tool {request.name!r}: use one of {', '.join(TOOL_NAMES)}"}
    try:
        return runner(memory, request.args)
    except MemdirError as exc:
        return {"error": str(exc)}


def tool_message(name: str, result: Mapping[str, Any]) -> str:
    """The text of the ``tool`` message that carries ``result`` back to the model."""
    return f"{TOOL_RESULT_PREFIX} {name}\n{json.dumps(result, ensure_ascii=False)}"


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


def _arguments(
    args: Mapping[str, Any], allowed: tuple[str, ...], required: tuple[str, ...]
) -> None:
    unknown = sorted(set(args) - set(allowed))
    if unknown:
        raise MemdirError(
            f"unknown argument(s) {', '.join(unknown)}: this tool takes {', '.join(allowed)}"
        )
    for name in required:
        if not isinstance(args.get(name), str) or not args[name].strip():
            raise MemdirError(f"argument {name!r} is required and must be a non-empty string")


def _optional_int(args: Mapping[str, Any], name: str, low: int, high: int) -> int | None:
    value = args.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise MemdirError(f"argument {name!r} must be a whole number from {low} to {high}")
    return value


def _search(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    _arguments(args, ("query", "max_results"), ("query",))
    limit = _optional_int(args, "max_results", 1, MAX_SEARCH_RESULTS)
    response = memory.search(args["query"], max_results=limit)
    return {
        "results": [
            {"citation": hit.citation, "score": round(hit.score, 3), "snippet": hit.snippet}
            for hit in response.results
        ],
        "warnings": response.warnings,
    }


def _get(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    _arguments(args, ("path", "from", "lines"), ("path",))
    result = memory.get(
        args["path"],
        from_line=_optional_int(args, "from", 1, 10_000_000),
        lines=_optional_int(args, "lines", 1, 10_000_000),
    )
    data = result.to_dict()
    if len(result.text) > MAX_GET_CHARS:
        data["text"] = result.text[:MAX_GET_CHARS]
        data["truncated"] = (
            f"only the first {MAX_GET_CHARS} characters are shown: ask for a line range "
            "with from and lines"
        )
    return data


def _write(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    _arguments(args, ("text", "target", "section"), ("text",))
    section = args.get("section")
    target = args.get("target") or ("memory" if section else "daily")
    if not isinstance(target, str) or (section is not None and not isinstance(section, str)):
        raise MemdirError("arguments target and section must be strings")
    return memory.write(
        args["text"], target=target, section=section, via="chat memory_write"
    ).to_dict()


_RUNNERS: dict[str, Callable[[Memory, Mapping[str, Any]], dict[str, Any]]] = {
    "memory_search": _search,
    "memory_get": _get,
    "memory_write": _write,
}


@dataclass(frozen=True)
class ToolSpec:
    """A memory tool as the chat agent offers it to a model with native tool calling."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


def tool_definitions(*, private: bool) -> tuple[ToolSpec, ...]:
    """The memory tools for native tool calling (a shared session cannot write MEMORY.md)."""
    write_properties: dict[str, Any] = {"text": {"type": "string"}}
    if private:
        write_properties["target"] = {"type": "string", "enum": ["daily", "memory"]}
        write_properties["section"] = {
            "type": "string",
            "enum": ["preferences", "decisions", "lessons", "facts", "todos"],
        }
    return (
        ToolSpec(
            "memory_search",
            "Search the memory notes; returns snippets with a citation path#Lstart-Lend.",
            {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_RESULTS},
                },
                "required": ["query"],
            },
        ),
        ToolSpec(
            "memory_get",
            "Read a memory note, or the lines around a search hit.",
            {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "from": {"type": "integer", "minimum": 1},
                    "lines": {"type": "integer", "minimum": 1},
                },
                "required": ["path"],
            },
        ),
        ToolSpec(
            "memory_write",
            "Save one short, self-contained fact to memory.",
            {"type": "object", "properties": write_properties, "required": ["text"]},
        ),
    )
