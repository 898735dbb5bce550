"""The MCP server (``memdir serve``): ``memory_search``, ``memory_get`` and ``memory_write`` over
stdio, with the resources ``memory://MEMORY.md`` and ``memory://today`` (SPEC §9).

A thin adapter: :class:`MemoryTools` checks a tool call's arguments and calls :class:`Memory`;
:func:`build_server` wires it to the official MCP Python SDK (a default dependency,
imported only when a server is built). A tool that fails answers with an MCP tool error
(``isError``) carrying memdir's one-line message; the server keeps running.

Privacy (SPEC §2): in ``shared`` scope MEMORY.md and USER.md are never returned by search or
get, ``memory_write`` can only append to the daily log, and ``memory://MEMORY.md`` is neither
listed nor readable.

Robustness (issue 14): every call has a time limit (:data:`CALL_TIMEOUT_S`; a call past it
answers with an error while its work finishes in the background); calls that use the index
(search, write) take a lock shared with the file watcher, but wait for it only that long, and
``memory_get`` (a plain file read) takes no lock at all, so one slow call cannot stall the
others; every reply is capped (:data:`MAX_REPLY_CHARS`, :data:`MAX_GET_CHARS`) with a note on
how to read on.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from memdir import __version__
from memdir.clock import now
from memdir.errors import MemdirError, PathNotAllowed, ProviderUnavailable
from memdir.lifecycle.write import MAX_TEXT_CHARS, SECTIONS, TARGETS
from memdir.memory import MAX_QUERY_CHARS, Memory
from memdir.watch import WorkspaceWatcher, retry_when_busy
from memdir.workspace import MEMORY_DIR, MEMORY_FILE

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

log = logging.getLogger("memdir.mcp")
T = TypeVar("T")

MEMORY_URI = "memory://MEMORY.md"
TODAY_URI = "memory://today"
#: The MCP SDK is a dependency of memdir: missing, the install is broken or partial.
MCP_HINT = "pip install 'mcp>=2.0,<3' (or reinstall memdir)"
_RESOURCES = {  # uri: (name, title, description)
    MEMORY_URI: (
        MEMORY_FILE,
        "Long-term memory",
        "Curated preferences, decisions, lessons, facts.",
    ),
    TODAY_URI: ("today", "Today's daily log", "memory/YYYY-MM-DD.md for today."),
}

INSTRUCTIONS = (
    "memdir is the user's long-term memory: plain Markdown notes (MEMORY.md for curated facts, "
    "memory/YYYY-MM-DD.md daily logs, topic notes, skills). Before answering anything about "
    "prior work, decisions, dates, people, preferences or todos, call memory_search and cite "
    "what you use (path#Lstart-Lend); read more with memory_get. When something worth keeping "
    "comes up, save it with memory_write as one short, self-contained sentence."
)

_SEARCH_DESCRIPTION = (
    "Search the user's long-term memory (Markdown notes: {files}). Call this BEFORE answering "
    "any question about prior work, decisions, dates, people, preferences or todos, instead of "
    "guessing. Returns the best-matching snippets, each with path, start_line, end_line, a "
    "score from 0 to 1 and a citation 'path#Lstart-Lend' to quote; read more lines around a hit "
    "with memory_get. English and Chinese both work; a few keywords or a short question are "
    "best. No results means nothing relevant is stored."
)
_GET_DESCRIPTION = (
    "Read a memory file, or some of its lines, usually after memory_search pointed at it. "
    "path is workspace-relative: {files}. Use from (1-based first line) and lines (how many) to "
    "read only the part around a search hit. A file that does not exist yet returns empty text, "
    "not an error."
)
_WRITE_DESCRIPTION = (
    "Save one durable fact to long-term memory so a later session can find it with "
    "memory_search. Write one short, self-contained sentence that keeps exact names, numbers, "
    "paths and dates (e.g. 'The staging database listens on port 5433'), not a chat summary. "
    "By default the fact is appended to today's daily log (memory/YYYY-MM-DD.md): use it for "
    "what happened, was done or was said today.{memory_part} A fact already stored is skipped "
    "and the answer says so. Never store secrets such as passwords or API keys."
)
_WRITE_MEMORY_PART = (
    " For a stable fact worth keeping for good, give a section of MEMORY.md (target then "
    "defaults to 'memory'): preferences (how the user likes things done), decisions (what was "
    "decided and why), lessons (what went wrong and how to avoid it), facts (names, hosts, "
    "ports, versions, paths), todos (open tasks)."
)


def tool_definitions(scope: str = "private") -> list[dict[str, Any]]:
    """The three tools as plain data: name, title, description, input schema, annotations."""
    private = scope == "private"
    files = (
        "MEMORY.md, memory/YYYY-MM-DD.md daily logs, memory/<topic>.md, skills/<name>/SKILL.md"
        if private
        else "memory/YYYY-MM-DD.md daily logs, memory/<topic>.md, skills/<name>/SKILL.md; "
        "MEMORY.md is not available in this shared session"
    )
    write_properties = {
        "text": _prop(
            "string", "The fact: one sentence (newlines become spaces).", maxLength=MAX_TEXT_CHARS
        ),
        "target": _prop(
            "string",
            "daily: today's log (default); memory: a section of MEMORY.md.",
            enum=list(TARGETS) if private else ["daily"],
        ),
    }
    if private:
        write_properties["section"] = _prop(
            "string", "The MEMORY.md section (implies target 'memory').", enum=list(SECTIONS)
        )
    read_only = {"read_only_hint": True, "idempotent_hint": True}
    search = {
        "query": _prop("string", "Keywords or a short question.", maxLength=MAX_QUERY_CHARS),
        "max_results": _prop(
            "integer", "How many snippets at most (default 6).", minimum=1, maximum=50
        ),
        "min_score": _prop(
            "number", "Drop results below this score (default 0.35).", minimum=0, maximum=1
        ),
    }
    get = {
        "path": _prop("string", "Workspace-relative path, e.g. memory/2026-11-28.md."),
        "from": _prop("integer", "First line to return (1-based; default 1).", minimum=1),
        "lines": _prop("integer", "How many lines (default: to the end of the file).", minimum=1),
    }
    write_notes = _WRITE_MEMORY_PART if private else ""
    return [
        _tool(
            "memory_search",
            "Search memory",
            _SEARCH_DESCRIPTION.format(files=files),
            search,
            ["query"],
            read_only,
        ),
        _tool(
            "memory_get",
            "Read a memory file",
            _GET_DESCRIPTION.format(files=files),
            get,
            ["path"],
            read_only,
        ),
        _tool(
            "memory_write",
            "Remember a fact",
            _WRITE_DESCRIPTION.format(memory_part=write_notes),
            write_properties,
            ["text"],
            {"read_only_hint": False, "destructive_hint": False, "idempotent_hint": False},
        ),
    ]


def _prop(kind: str, description: str, **constraints: Any) -> dict[str, Any]:
    return {"type": kind, "description": description, **constraints}


def _tool(
    name: str,
    title: str,
    description: str,
    properties: dict[str, Any],
    required: list[str],
    annotations: dict[str, bool],
) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    return {
        "name": name,
        "title": title,
        "description": description,
        "input_schema": schema,
        "annotations": annotations,
    }


_ALL_ARGUMENTS = {d["name"]: tuple(d["input_schema"]["properties"]) for d in tool_definitions()}
#: Seconds a tool call may take, waiting for the index lock included.
CALL_TIMEOUT_S = 30.0
#: The most characters of text one ``memory_get`` reply or resource read carries.
MAX_GET_CHARS = 50_000
#: The most characters of JSON any other reply carries.
MAX_REPLY_CHARS = 60_000
#: Tools that only read files, never the shared index: they run without the lock.
_LOCK_FREE = frozenset({"memory_get"})


class MemoryTools:
    """The tools and resources over one :class:`Memory`, independent of the MCP SDK.

    Args:
        memory: the memory to serve; its ``scope`` decides what is visible.
        lock: held around every call that uses the index; share it with a
            :class:`WorkspaceWatcher`.
        timeout: seconds one call may take, waiting for the lock included.
    """

    def __init__(
        self,
        memory: Memory,
        *,
        lock: threading.Lock | None = None,
        timeout: float = CALL_TIMEOUT_S,
    ) -> None:
        self.memory = memory
        self.lock = lock if lock is not None else threading.Lock()
        self.timeout = timeout
        self._tools: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
            "memory_search": self._search,
            "memory_get": self._get,
            "memory_write": self._write,
        }
        self._definitions = {d["name"]: d for d in tool_definitions(memory.scope)}

    @property
    def private(self) -> bool:
        return self.memory.scope == "private"

    def definitions(self) -> list[dict[str, Any]]:
        return list(self._definitions.values())

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Run tool ``name``; returns its JSON-ready result.

        Raises:
            MemdirError: unknown tool, invalid arguments, or what :class:`Memory` raised.
        """
        tool = self._tools.get(name)
        if tool is None:
            raise MemdirError(f"unknown tool {name!r}: use {', '.join(self._tools)}")
        args = dict(arguments or {})
        # Checked against the private schema, so that in a shared session a MEMORY.md section
        # is refused by Memory with the reason, not as an unknown argument.
        allowed = _ALL_ARGUMENTS[name]
        unknown = sorted(set(args) - set(allowed))
        if unknown:
            raise MemdirError(
                f"{name}: unknown argument(s) {', '.join(unknown)}; accepted: {', '.join(allowed)}"
            )
        job = partial(retry_when_busy, partial(tool, args))
        if name not in _LOCK_FREE:
            job = partial(self._locked, name, job)
        return cap_reply(name, run_with_timeout(job, self.timeout, name))

    def _locked(self, name: str, job: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        if not self.lock.acquire(timeout=self.timeout):
            raise MemdirError(
                f"{name}: memory is busy with another call (waited {self.timeout:.0f} s); "
                "try again in a moment"
            )
        try:
            return job()
        finally:
            self.lock.release()

    def _search(self, args: Mapping[str, Any]) -> dict[str, Any]:
        min_score = _arg(args, "min_score", float)
        if min_score is not None and not 0.0 <= min_score <= 1.0:
            raise MemdirError("'min_score' must be between 0 and 1")
        response = self.memory.search(
            _arg(args, "query", str, required=True),
            max_results=_arg(args, "max_results", int),
            min_score=min_score,
        )
        return response.to_dict()

    def _get(self, args: Mapping[str, Any]) -> dict[str, Any]:
        result = self.memory.get(
            _arg(args, "path", str, required=True),
            from_line=_arg(args, "from", int),
            lines=_arg(args, "lines", int),
        )
        return result.to_dict()

    def _write(self, args: Mapping[str, Any]) -> dict[str, Any]:
        section = _arg(args, "section", str)
        target = _arg(args, "target", str) or ("memory" if section is not None else "daily")
        result = self.memory.write(
            _arg(args, "text", str, required=True),
            target=target,
            section=section,
            via="MCP memory_write",
        )
        return result.to_dict()

    # -- resources ------------------------------------------------------------------------

    def resources(self) -> list[dict[str, str]]:
        """The readable resources (MEMORY.md only in private scope)."""
        return [
            {"uri": uri, "name": name, "title": title, "description": description}
            for uri, (name, title, description) in _RESOURCES.items()
            if self.private or uri != MEMORY_URI
        ]

    def read_resource(self, uri: str) -> str:
        """The Markdown text of a resource (empty when the file does not exist yet).

        Raises:
            PathNotAllowed: ``memory://MEMORY.md`` in a shared session.
            MemdirError: an unknown resource.
        """
        if uri == MEMORY_URI:
            if not self.private:
                raise PathNotAllowed(f"{MEMORY_FILE} is not available in a shared session")
            path = MEMORY_FILE
        elif uri == TODAY_URI:
            path = f"{MEMORY_DIR}/{now().date().isoformat()}.md"
        else:
            known = ", ".join(r["uri"] for r in self.resources())
            raise MemdirError(f"unknown resource {uri!r}: available: {known}")
        text = run_with_timeout(lambda: self.memory.get(path).text, self.timeout, uri)
        if len(text) <= MAX_GET_CHARS:
            return text
        shown = _cut_at_line(text, MAX_GET_CHARS)
        next_line = shown.count("\n") + 1
        return (
            shown + f"\n\n[cut at {len(shown):,} of {len(text):,} characters: read on with "
            f"memory_get path={path} from={next_line}]\n"
        )


_KINDS: dict[type, tuple[tuple[type, ...], str]] = {
    str: ((str,), "a string"),
    int: ((int,), "an integer"),
    float: ((int, float), "a number"),
}


def _arg(args: Mapping[str, Any], name: str, kind: type, *, required: bool = False) -> Any:
    """``args[name]`` checked to be of ``kind`` (str, int or float), or None when absent."""
    value: Any = args.get(name)
    if value is None:
        if required:
            raise MemdirError(f"missing argument {name!r}")
        return None
    if kind is int and isinstance(value, float) and value.is_integer():
        value = int(value)
    accepted, label = _KINDS[kind]
    if isinstance(value, bool) or not isinstance(value, accepted):
        raise MemdirError(f"{name!r} must be {label}, not {type(value).__name__}")
    checked: Any = value  # isinstance with a tuple of types narrows to object
    return float(checked) if kind is float else checked


def run_with_timeout(fn: Callable[[], T], seconds: float, name: str) -> T:
    """``fn()`` on its own thread, waited for at most ``seconds``.

    Raises:
        MemdirError: it took longer (its work goes on in the background and is not undone).
    """
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=work, name=f"memdir {name}", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise MemdirError(
            f"{name} took longer than {seconds:.0f} s and was abandoned (a write may still "
            "complete); try a narrower call"
        )
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


def cap_reply(name: str, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` within the reply caps, with ``truncated`` saying how to read on."""
    if name == "memory_get" and len(data.get("text", "")) > MAX_GET_CHARS:
        text = data["text"]
        shown = _cut_at_line(text, MAX_GET_CHARS)
        lines = shown.count("\n") + (0 if shown.endswith("\n") else 1)
        next_from = data["from"] + lines
        data = {**data, "text": shown, "lines": lines, "next_from": next_from}
        data["truncated"] = (
            f"only lines {data['from']}-{next_from - 1} of {data['total_lines']} are shown (a "
            f"reply carries at most {MAX_GET_CHARS:,} characters): read on with from={next_from}"
        )
        return data
    if len(json.dumps(data, ensure_ascii=False)) <= MAX_REPLY_CHARS or "results" not in data:
        return data
    results = list(data["results"])
    data = dict(data)
    while results and len(json.dumps({**data, "results": results}, ensure_ascii=False)) > (
        MAX_REPLY_CHARS
    ):
        results.pop()
    left_out = len(data["results"]) - len(results)
    data["results"] = results
    data["truncated"] = (
        f"{left_out} more result(s) left out to keep the reply under {MAX_REPLY_CHARS:,} "
        "characters: ask for fewer with max_results, or read a hit with memory_get"
    )
    return data


def _cut_at_line(text: str, limit: int) -> str:
    """The longest start of ``text`` within ``limit`` characters that ends at a line end (or
    exactly at ``limit`` when the first line alone is longer)."""
    cut = text.rfind("\n", 0, limit)
    return text[: cut + 1] if cut > 0 else text[:limit]


def _one_line(message: str) -> str:
    return " ".join(message.split())


# -- the MCP SDK --------------------------------------------------------------------------


def build_server(
    tools: MemoryTools, *, on_request: Callable[[], None] | None = None
) -> Server[Any]:
    """An MCP low-level server exposing ``tools``.

    Args:
        tools: what the server exposes.
        on_request: called before each request other than ``initialize`` is handled.

    Raises:
        ProviderUnavailable: the MCP SDK is not installed.
    """
    try:
        import anyio.to_thread
        import mcp_types as types
        from mcp.server.lowlevel import Server
        from mcp.shared.exceptions import MCPError
    except ImportError as exc:
        raise ProviderUnavailable(f"`memdir serve` needs the MCP Python SDK: {MCP_HINT}") from exc

    listed_tools = [
        types.Tool(
            name=d["name"],
            title=d["title"],
            description=d["description"],
            input_schema=d["input_schema"],
            annotations=types.ToolAnnotations(title=d["title"], **d["annotations"]),
        )
        for d in tools.definitions()
    ]

    def requested() -> None:
        if on_request is not None:
            on_request()

    def tool_error(message: str) -> types.CallToolResult:
        return types.CallToolResult(
            content=[types.TextContent(text=_one_line(message))], is_error=True
        )

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        requested()
        return types.ListToolsResult(tools=listed_tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        requested()
        try:
            data = await anyio.to_thread.run_sync(tools.call, params.name, params.arguments)
        except MemdirError as exc:
            return tool_error(str(exc))
        except Exception as exc:
            log.exception("memdir: tool %s failed", params.name)
            return tool_error(f"internal error: {type(exc).__name__}: {exc}")
        text = json.dumps(data, ensure_ascii=False)
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=data)

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        requested()
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=r["uri"],
                    name=r["name"],
                    title=r["title"],
                    description=r["description"],
                    mime_type="text/markdown",
                )
                for r in tools.resources()
            ]
        )

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        requested()
        uri = str(params.uri)
        try:
            text = await anyio.to_thread.run_sync(tools.read_resource, uri)
        except MemdirError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=_one_line(str(exc))) from exc
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown", text=text)]
        )

    return Server(
        "memdir",
        version=__version__,
        title="memdir long-term memory",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


def serve_stdio(memory: Memory, *, watch: bool = True) -> None:
    """Serve ``memory`` over stdio until the client closes the connection.

    Args:
        memory: the memory to serve (its scope applies).
        watch: keep the index current with a :class:`WorkspaceWatcher` while serving.

    Raises:
        ProviderUnavailable: the MCP SDK is not installed.
    """
    lock = threading.Lock()
    tools = MemoryTools(memory, lock=lock)
    watcher = WorkspaceWatcher(memory, lock=lock, on_error=_log_sync_error) if watch else None

    def start_watching() -> None:
        # Started on the first request after the handshake, not before: its first sync (model
        # load, hashing) would otherwise compete with the answer to `initialize`, which
        # clients wait for with a timeout (and a health check such as `claude mcp list` never
        # gets further than that).
        if watcher is not None:
            watcher.start()  # idempotent

    server = build_server(tools, on_request=start_watching)
    import anyio
    from mcp.server.stdio import stdio_server

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(run)
    finally:
        if watcher is not None:
            watcher.stop()


def _log_sync_error(exc: Exception) -> None:
    log.warning("memdir: background index sync failed (searches still sync first): %s", exc)
