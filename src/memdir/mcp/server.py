"""The MCP server (``memdir serve``): ``memory_search``, ``memory_get``, ``memory_write`` and (in a
private session) ``memory_forget`` over stdio, with the resources ``memory://MEMORY.md`` and
``memory://today`` (docs/design.md#interfaces).

A thin adapter: the tools are the contract of :mod:`memdir.tools` (names, descriptions, schemas,
limits, and how a call runs), which :class:`MemoryTools` serves over one :class:`Memory`;
:func:`build_server` wires it to the official MCP Python SDK (a default dependency,
imported only when a server is built). A tool that fails answers with an MCP tool error
(``isError``) carrying memdir's one-line message; the server keeps running. A reply is one
compact JSON text (:func:`compact_json`), never the same JSON twice.

Privacy (docs/design.md#scopes): in ``shared`` scope MEMORY.md and USER.md are never returned by
search or get, ``memory_write`` can only append to the daily log, and ``memory://MEMORY.md`` is
neither listed nor readable.

Robustness (issue 14): every call has a time limit (:data:`CALL_TIMEOUT_S`; a call past it
answers with an error while its work finishes in the background); calls that use the index
(search, write) take a lock shared with the file watcher, but wait for it only that long, and
``memory_get`` (a plain file read) takes no lock at all, so one slow call cannot stall the
others; every reply is capped (:data:`MAX_REPLY_CHARS`; ``memory_get`` pages by the contract's
limits, resources at :data:`~memdir.tools.MAX_GET_CHARS`) with a note on how to read on; and
every request line gets an answer, a JSON-RPC error for one that cannot be read
(:mod:`memdir.mcp.stdio`).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from memdir import __version__
from memdir.clock import now
from memdir.deadline import CallTimedOut, run_with_timeout
from memdir.errors import MemdirError, PathNotAllowed, ProviderUnavailable
from memdir.memory.facade import Memory
from memdir.tools import MAX_GET_CHARS, SERVER_INSTRUCTIONS, call_tool, memory_tools
from memdir.watch import WorkspaceWatcher, retry_when_busy
from memdir.workspace.layout import MEMORY_DIR, MEMORY_FILE

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

log = logging.getLogger("memdir.mcp")

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

#: Seconds a tool call may take, waiting for the index lock included.
CALL_TIMEOUT_S = 30.0
#: What a call past its time limit is told.
_ABANDONED = " and was abandoned (a write may still complete); try a narrower call"
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
        #: Called after :meth:`start_over` (the per-user service moves its watcher along).
        self.on_start_over: Callable[[], None] | None = None
        self.specs = memory_tools(
            memory.config.search,
            private=memory.scope == "private",
            forget=True,
            calibrated=memory.calibration is not None,
        )

    @property
    def private(self) -> bool:
        return self.memory.scope == "private"

    def definitions(self) -> list[dict[str, Any]]:
        """The tools as plain data (name, title, description, input schema, annotations)."""
        return [spec.to_dict() for spec in self.specs]

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Run tool ``name`` (see :func:`memdir.tools.call_tool`); returns its JSON-ready
        result, within the time limit and the reply cap.

        Raises:
            MemdirError: unknown tool, invalid arguments, what :class:`Memory` raised, or the
                time limit passed.
        """
        offered = [spec.name for spec in self.specs]
        run = partial(call_tool, self.memory, name, arguments, via=f"MCP {name}", offered=offered)
        job = partial(retry_when_busy, run)
        if name not in _LOCK_FREE:
            job = partial(self._locked, self.lock, name, job)
        try:
            return cap_reply(name, run_with_timeout(job, self.timeout, name, hint=_ABANDONED))
        except CallTimedOut:
            if name not in _LOCK_FREE:
                self.start_over(name)
            raise

    def _locked(
        self, lock: threading.Lock, name: str, job: Callable[[], dict[str, Any]]
    ) -> dict[str, Any]:
        if not lock.acquire(timeout=self.timeout):
            raise MemdirError(
                f"{name}: memory is busy with another call (waited {self.timeout:.0f} s); "
                "try again in a moment"
            )
        try:
            return job()
        finally:
            lock.release()

    def start_over(self, name: str) -> None:
        """A call past its time limit goes on in the background (a thread cannot be
        stopped), holding the lock and the index connection it started with: the next calls
        get a new :class:`Memory` of the same workspace (:meth:`Memory.reopen`) and a lock of
        their own, so one stuck call cannot leave every later one "busy" for the server's
        whole life. The abandoned call finishes, or not, on what it had."""
        try:
            fresh = self.memory.reopen()
        except MemdirError as exc:
            log.warning(
                "memdir: %s was abandoned and the memory could not be reopened: %s", name, exc
            )
            return
        self.memory, self.lock = fresh, threading.Lock()
        log.warning("memdir: %s was abandoned; later calls use a fresh index connection", name)
        if self.on_start_over is not None:
            self.on_start_over()

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
        text = run_with_timeout(
            lambda: self.memory.get(path).text, self.timeout, uri, hint=_ABANDONED
        )
        if len(text) <= MAX_GET_CHARS:
            return text
        shown = _cut_at_line(text, MAX_GET_CHARS)
        next_line = shown.count("\n") + 1
        return (
            shown + f"\n\n[cut at {len(shown):,} of {len(text):,} characters: read on with "
            f"memory_get path={path} from={next_line}]\n"
        )


def compact_json(data: dict[str, Any]) -> str:
    """A tool's reply as the one text block of its result: JSON without spaces between its
    tokens. Not also as ``structuredContent``: no output schema is declared, so a client
    shows the model the text, and the same JSON twice cost twice the tokens
    (docs/design.md#interfaces)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def cap_reply(name: str, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` within the reply caps, with ``truncated`` and a ``note`` saying how to read on.

    ``memory_get`` pages by itself (the contract's limits); a search answer loses its last
    results until it fits."""
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
    data["truncated"] = True
    data["note"] = (
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

    async def run_tool(
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
        return types.CallToolResult(content=[types.TextContent(text=compact_json(data))])

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
        instructions=SERVER_INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=run_tool,
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
    watcher = (
        WorkspaceWatcher(memory, lock=lock, on_error=_log_sync_error, warm=True) if watch else None
    )

    def start_watching() -> None:
        # Started on the first request after the handshake, not before: its first sync (model
        # load, hashing) would otherwise compete with the answer to `initialize`, which
        # clients wait for with a timeout (and a health check such as `claude mcp list` never
        # gets further than that).
        if watcher is not None:
            watcher.start()  # idempotent

    server = build_server(tools, on_request=start_watching)
    import anyio

    # memdir's own transport, not the SDK's: it answers a request line the SDK cannot read
    # (a lone surrogate, bytes that are not UTF-8) instead of dropping it without a word.
    from memdir.mcp.stdio import stdio_transport

    async def run() -> None:
        async with stdio_transport() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(run)
    finally:
        if watcher is not None:
            watcher.stop()


def _log_sync_error(exc: Exception) -> None:
    log.warning("memdir: background index sync failed (searches still sync first): %s", exc)
