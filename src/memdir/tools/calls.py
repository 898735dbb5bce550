"""Running a memory tool call: the arguments checked against the contract, then :class:`Memory`.

:func:`call_tool` is the one implementation behind the MCP server and the chat agent. It checks
the arguments against the tool's schema in :mod:`memdir.tools.contract` (names, types, ranges,
enums), runs the call, and returns the JSON-ready reply; every failure is a
:class:`~memdir.errors.MemdirError` with a one-line message the model can act on.

Arguments are checked against the private (owner) schema whatever the scope, so that in a
shared session a MEMORY.md section is refused by :class:`Memory` with the reason ("not in a
shared session"), not as an unknown argument.

``memory_get`` returns at most :data:`MAX_GET_LINES` lines and :data:`MAX_GET_CHARS`
characters per call; a cut answer carries ``truncated``, ``next_from`` and a ``note`` saying how
to read on.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from memdir.config.settings import SearchConfig
from memdir.errors import MemdirError
from memdir.memory.facade import Memory
from memdir.tools.contract import (
    FORGET_TOOL,
    MAX_GET_CHARS,
    MAX_GET_LINES,
    TOOL_NAMES,
    ToolSpec,
    memory_tools,
)

#: The schemas arguments are checked against (the owner's: see the module docstring).
_SCHEMAS = {spec.name: spec for spec in memory_tools(SearchConfig(), private=True, forget=True)}


def call_tool(
    memory: Memory,
    name: str,
    arguments: Mapping[str, Any] | None,
    *,
    via: str,
    offered: Collection[str] = TOOL_NAMES,
) -> dict[str, Any]:
    """Run the memory tool ``name`` with ``arguments`` on ``memory``.

    Args:
        memory: the memory; its scope decides what is visible and writable.
        name: ``memory_search``, ``memory_get``, ``memory_write`` (or ``memory_forget`` when
            ``offered`` has it).
        arguments: the call's arguments (None: none).
        via: who asked, for the audit record of a write (``"MCP memory_write"``).
        offered: the tools the caller listed; another name is refused (a model cannot reach
            ``memory_forget`` by naming it when it was not offered).

    Returns:
        The reply as a JSON-ready dict.

    Raises:
        MemdirError: unknown tool, invalid arguments, or what :class:`Memory` raised.
    """
    run = _RUNNERS.get(name)
    if run is None or name not in offered:
        raise MemdirError(f"unknown tool {name!r}: use {', '.join(offered)}")
    args = checked_arguments(_SCHEMAS[name], arguments or {})
    return run(memory, args, via)


def checked_arguments(spec: ToolSpec, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """``arguments`` checked against ``spec``'s schema, whole numbers given as 3.0 made ints.

    Raises:
        MemdirError: an unknown or missing argument, or a value of the wrong type, out of
            range, too long, or not one of the allowed values.
    """
    unknown = sorted(set(arguments) - set(spec.properties))
    if unknown:
        raise MemdirError(
            f"{spec.name}: unknown argument(s) {', '.join(unknown)}; "
            f"accepted: {', '.join(spec.properties)}"
        )
    checked: dict[str, Any] = {}
    for name, schema in spec.properties.items():
        value = arguments.get(name)
        if value is None:
            if name in spec.required:
                raise MemdirError(f"missing argument {name!r}")
            continue
        checked[name] = _checked_value(name, value, schema)
    return checked


_KINDS: dict[str, tuple[tuple[type, ...], str]] = {
    "string": ((str,), "a string"),
    "integer": ((int,), "an integer"),
    "number": ((int, float), "a number"),
}


def _checked_value(name: str, given: Any, schema: Mapping[str, Any]) -> Any:
    kind = schema["type"]
    if kind == "boolean":
        if not isinstance(given, bool):
            raise MemdirError(f"{name!r} must be true or false, not {type(given).__name__}")
        return given
    if kind == "array":  # a list of strings (memory_search's queries)
        if not isinstance(given, list):
            raise MemdirError(f"{name!r} must be a list of strings, not {type(given).__name__}")
        if "maxItems" in schema and len(given) > schema["maxItems"]:
            raise MemdirError(f"{name!r} has {len(given)} items; the limit is {schema['maxItems']}")
        return [
            _checked_value(f"{name}[{i}]", item, schema["items"]) for i, item in enumerate(given)
        ]
    if kind == "integer" and isinstance(given, float) and given.is_integer():
        given = int(given)
    accepted, label = _KINDS[kind]
    if isinstance(given, bool) or not isinstance(given, accepted):
        raise MemdirError(f"{name!r} must be {label}, not {type(given).__name__}")
    value: Any = given  # isinstance with a tuple of types narrows to object
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(schema["enum"])
        raise MemdirError(f"unknown {name} {value!r}: choose one of {choices}")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        raise MemdirError(
            f"{name!r} is {len(value):,} characters; the limit is {schema['maxLength']}"
        )
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and value < low:
        raise MemdirError(f"{name!r} must be {low} or more")
    if high is not None and value > high:
        raise MemdirError(f"{name!r} must be at most {high}")
    return float(value) if kind == "number" else value


# -- the tools ------------------------------------------------------------------------------


def _search(memory: Memory, args: Mapping[str, Any], via: str) -> dict[str, Any]:
    response = memory.search(
        [args["query"], *args.get("queries", [])],
        max_results=args.get("max_results"),
        min_score=args.get("min_score"),
        variants=args.get("variants", ()),
    )
    return response.to_dict()


def _get(memory: Memory, args: Mapping[str, Any], via: str) -> dict[str, Any]:
    return read_capped(
        memory,
        args["path"],
        from_line=args.get("from"),
        lines=args.get("lines"),
        copy=args.get("copy"),
    )


def read_capped(
    memory: Memory,
    path: str,
    *,
    from_line: int | None = None,
    lines: int | None = None,
    copy: str | None = None,
) -> dict[str, Any]:
    """``memory_get``: at most :data:`MAX_GET_LINES` lines and :data:`MAX_GET_CHARS` characters
    of ``path`` from ``from_line``; when more was asked for (or the file goes on), the reply
    has ``truncated: true``, ``next_from`` and a ``note`` on how to read on.

    Raises:
        MemdirError: what :meth:`Memory.get` raises (a path outside memory, a binary file …).
    """
    start = from_line or 1
    wanted = lines if lines is not None else MAX_GET_LINES
    result = memory.get(path, from_line=start, lines=min(wanted, MAX_GET_LINES), copy=copy)
    data = result.to_dict()
    if not result.exists:
        return data
    kept: list[str] = []
    used = 0
    cut_line = False
    for line in result.text.split("\n") if result.lines else []:
        cost = len(line) + (1 if kept else 0)
        if used + cost > MAX_GET_CHARS:
            if not kept:  # one line longer than the cap: its start, and say so
                kept.append(line[:MAX_GET_CHARS])
                cut_line = True
            break
        kept.append(line)
        used += cost
    shown_end = start + len(kept) - 1
    file_goes_on = shown_end < result.total_lines
    asked_more = lines is None or start + lines - 1 > shown_end
    data["text"] = "\n".join(kept)
    data["lines"] = len(kept)
    if file_goes_on and asked_more:
        data["truncated"] = True
        data["next_from"] = shown_end + 1
        data["note"] = _read_on_note(result.path, start, shown_end, result.total_lines, cut_line)
    return data


def _read_on_note(path: str, start: int, end: int, total: int, cut_line: bool) -> str:
    limits = f"one call returns at most {MAX_GET_LINES} lines and {MAX_GET_CHARS:,} characters"
    shown = f"line {start} only, cut" if cut_line else f"lines {start}-{end}"
    return (
        f"{path} has {total:,} lines; showing {shown} ({limits}): to read on, call memory_get "
        f'with "from": {end + 1} (and "lines" up to {MAX_GET_LINES})'
    )


def _write(memory: Memory, args: Mapping[str, Any], via: str) -> dict[str, Any]:
    section = args.get("section")
    target = args.get("target") or ("memory" if section is not None else "daily")
    result = memory.write(args["text"], target=target, section=section, via=via)
    return result.to_dict()


def _forget(memory: Memory, args: Mapping[str, Any], via: str) -> dict[str, Any]:
    result = memory.forget(
        args["target"], apply=bool(args.get("apply")), force=bool(args.get("force")), via=via
    )
    return result.to_dict()


_RUNNERS: dict[str, Callable[[Memory, Mapping[str, Any], str], dict[str, Any]]] = {
    "memory_search": _search,
    "memory_get": _get,
    "memory_write": _write,
    FORGET_TOOL: _forget,
}
