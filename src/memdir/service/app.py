"""The service's routes, every one behind the Host and token checks (:class:`Guard`).

- ``POST /v1/cli``: a thin client's command (:mod:`memdir.service.commands`); 409 with the
  reason when the service declines it (the client then runs it itself);
- ``POST /v1/hooks/claude-code/<event>?workspace=ABS``: Claude Code's HTTP hooks
  (``user-prompt-submit``, ``pre-compact``, ``session-end``, ``session-start``): the hook's JSON
  in, the reply Claude Code reads out (an empty body: nothing to add), as ``memdir hook``;
- ``/mcp?workspace=ABS[&scope=shared]``: the MCP server over streamable HTTP, the tools of
  ``memdir serve`` on the warm workspace;
- ``POST /v1/ui?workspace=ABS&port=N[&writable=1]``: the inspector (``memdir ui``) of the warm
  workspace on 127.0.0.1:N, in this process, so it shows the live index and embedding;
- ``GET /v1/health``: version, pid and the served workspaces; ``POST /v1/shutdown``;
- the JSON routes of other agents' plugins (:mod:`memdir.service.agent_routes`).

A workspace is one the service can open: an absolute path to an existing folder; its private
files follow the scope, as over stdio. The guard refuses a request whose Host is not the
loopback address and port the service listens on (a web page cannot reach it by DNS rebinding),
whose ``Origin`` is a web page's (:mod:`memdir.service.origins`), or that lacks
``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from memdir import __version__
from memdir.errors import MemdirError
from memdir.hooks.claude_code import EVENT_COMMANDS
from memdir.hooks.events import MAX_INPUT_BYTES, run_hook
from memdir.mcp_server import build_server
from memdir.service.agent_routes import agent_routes
from memdir.service.commands import Declined, decode_request, run_command
from memdir.service.origins import origin_allowed
from memdir.service.pool import Pool, WarmWorkspace
from memdir.service.protocol import ACK, DECLINED

log = logging.getLogger("memdir.service")
#: Seconds between looks for idle workspaces.
REAP_EVERY_S = 60.0
#: The largest request body read (a hook's transcript is read from its path, not sent).
MAX_BODY_BYTES = MAX_INPUT_BYTES + (1 << 20)
MCP_METHODS = ["GET", "POST", "DELETE"]


class Guard:
    """Refuses what is not for this service: a Host other than the loopback address and port
    it listens on, a missing or wrong bearer token, anything but HTTP."""

    def __init__(self, app: ASGIApp, *, token: str, port: Callable[[], int]) -> None:
        self.app = app
        self.token = token.encode("ascii")
        self.port = port
        #: The app's shared state; ``state["stop"]`` stops the server (set by its runner).
        self.state: dict[str, Any] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            return  # no websockets
        headers = dict(scope["headers"])
        port = self.port()
        hosts = {f"127.0.0.1:{port}".encode(), f"localhost:{port}".encode()}
        server = scope.get("server")
        local_socket = server is None or server[1] is None  # the Unix socket: no browser there
        if not local_socket and headers.get(b"host") not in hosts:
            await PlainTextResponse("wrong Host", status_code=421)(scope, receive, send)
            return
        if not local_socket and not origin_allowed(headers.get(b"origin")):
            await PlainTextResponse("Origin not allowed", status_code=403)(scope, receive, send)
            return
        given = headers.get(b"authorization", b"")
        if not hmac.compare_digest(given, b"Bearer " + self.token):
            answer = PlainTextResponse("a bearer token is required", status_code=401)
            await answer(scope, receive, send)
            return
        await self.app(scope, receive, send)


class MCPEndpoint:
    """``/mcp``: each workspace's MCP server (stateless streamable HTTP, JSON replies)."""

    def __init__(self, pool: Pool, tasks: Callable[[], anyio.abc.TaskGroup]) -> None:
        self.pool = pool
        self.tasks = tasks
        self._starting = anyio.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        root = request.query_params.get("workspace", "")
        scope_name = request.query_params.get("scope", "private")
        if not root or scope_name not in ("private", "shared"):
            answer = PlainTextResponse(
                "name the workspace: /mcp?workspace=/absolute/path[&scope=shared]", 400
            )
            await answer(scope, receive, send)
            return
        try:
            warm = await anyio.to_thread.run_sync(self.pool.get, Path(root), scope_name)
        except MemdirError as exc:
            await PlainTextResponse(str(exc), status_code=404)(scope, receive, send)
            return
        manager = await self._manager(warm)
        await manager.handle_request(scope, receive, send)

    async def _manager(self, warm: WarmWorkspace) -> Any:
        async with self._starting:
            if warm.mcp is None:
                from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

                server = build_server(warm.tools)
                manager = StreamableHTTPSessionManager(server, json_response=True, stateless=True)
                cancel = await self.tasks().start(_run_manager, manager)
                warm.mcp = (manager, cancel)
        return warm.mcp[0]


async def _run_manager(manager: Any, *, task_status: Any) -> None:
    with anyio.CancelScope() as cancel:
        async with manager.run():
            task_status.started(cancel)
            await anyio.sleep_forever()


def create_app(
    pool: Pool, *, token: str, port: Callable[[], int], exit_when_idle: bool = False
) -> Guard:
    """The service as an ASGI app (see the module's docstring); set ``app.state["stop"]`` to
    what stops the server.

    Args:
        pool: the warm workspaces.
        token: the bearer token every request must carry.
        port: the port the service listens on (known once bound).
        exit_when_idle: stop once no workspace was used for ``pool.idle_s`` (a service
            started on demand).
    """
    state: dict[str, Any] = {"stop": lambda: None}

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tasks:
            state["tasks"] = tasks
            tasks.start_soon(_reap, pool, lambda: state["stop"]() if exit_when_idle else None)
            try:
                yield
            finally:
                tasks.cancel_scope.cancel()
        await anyio.to_thread.run_sync(pool.close)

    async def ui(request: Request) -> Response:
        root = request.query_params.get("workspace", "")
        try:
            port = int(request.query_params.get("port", "8765"))
            warm = await anyio.to_thread.run_sync(pool.get, Path(root))
            url = await _start_ui(
                state, pool, warm, port, request.query_params.get("writable") == "1"
            )
        except (MemdirError, ValueError) as exc:
            return PlainTextResponse(str(exc), status_code=409)
        return JSONResponse({"url": url})

    async def health(request: Request) -> Response:
        served = [{"workspace": str(w.root), "scope": w.scope} for w in pool.served()]
        return JSONResponse({"version": __version__, "pid": os.getpid(), "served": served})

    async def shutdown(request: Request) -> Response:
        state["stop"]()
        return PlainTextResponse("stopping")

    async def cli(request: Request) -> Response:
        body = await _body(request)

        async def answer() -> AsyncIterator[bytes]:
            yield ACK  # at once: the client knows the service is alive and working on it
            try:
                run = decode_request(body)
                yield await anyio.to_thread.run_sync(run_command, pool, run)
            except Declined as exc:
                log.info("memdir service: declined a command: %s", exc)
                yield DECLINED + str(exc).encode("utf-8", "replace")

        return StreamingResponse(answer(), media_type="application/octet-stream")

    async def hook(request: Request) -> Response:
        event = request.path_params["event"]
        root = request.query_params.get("workspace", "")
        if event not in EVENT_COMMANDS:
            return PlainTextResponse(f"unknown hook {event}", status_code=404)
        if not root or not Path(root).is_absolute():
            return PlainTextResponse("name the workspace: ?workspace=/absolute/path", 400)
        raw = (await _body(request)).decode("utf-8", "replace")
        refused = _foreign_transcript(raw)
        if refused:
            return PlainTextResponse(refused, status_code=403)

        def run() -> str:
            reply = run_hook(event, raw, Path(root), open_memory=pool.lend)
            for note in reply.notes:
                log.info("memdir hook %s (%s): %s", event, root, note)
            return reply.stdout()

        text = await anyio.to_thread.run_sync(run)
        return Response(text, media_type="application/json")

    app = Starlette(
        routes=[
            Route("/v1/health", health, methods=["GET"]),
            Route("/v1/shutdown", shutdown, methods=["POST"]),
            Route("/v1/ui", ui, methods=["POST"]),
            Route("/v1/cli", cli, methods=["POST"]),
            Route("/v1/hooks/claude-code/{event}", hook, methods=["POST"]),
            Route("/mcp", MCPEndpoint(pool, lambda: state["tasks"]), methods=MCP_METHODS),
            *agent_routes(pool),
        ],
        lifespan=lifespan,
        exception_handlers={TooLarge: _too_large},
    )
    guard = Guard(app, token=token, port=port)
    guard.state = state
    return guard


async def _start_ui(
    state: dict[str, Any], pool: Pool, warm: WarmWorkspace, port: int, writable: bool
) -> str:
    """Serve the inspector of ``warm``'s workspace on 127.0.0.1:``port`` (once per workspace
    and port); its URL.

    Raises:
        MemdirError: the port is taken by something else.
    """
    import uvicorn

    from memdir.ui.app import create_app as create_ui
    from memdir.ui.inspector import UIOptions
    from memdir.ui.server import bind, loopback_hosts

    running: dict[tuple[Path, int, bool], str] = state.setdefault("ui", {})
    key = (warm.root, port, writable)
    if key in running:
        return running[key]
    sock = bind("127.0.0.1", port)
    bound = sock.getsockname()[1]
    options = UIOptions(writable=writable, allowed_hosts=loopback_hosts("127.0.0.1"))
    root, scope = warm.root, warm.scope
    app = create_ui(warm.memory, options, lambda: pool.lend(root, scope))

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:  # the service's own handlers stay
            yield

    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="off", server_header=False
    )
    state["tasks"].start_soon(Server(config).serve, [sock])
    url = f"http://127.0.0.1:{bound}/"
    running[key] = url
    return url


def claude_projects() -> list[Path]:
    """Where Claude Code keeps its transcripts: ``$CLAUDE_CONFIG_DIR/projects`` and
    ``~/.claude/projects``."""
    roots = [Path.home() / ".claude" / "projects"]
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    if configured:
        roots.insert(0, Path(configured).expanduser() / "projects")
    return roots


def _foreign_transcript(raw: str) -> str:
    """Why an HTTP hook's ``transcript_path`` is refused ("" when it is not): the service
    reads a transcript only from Claude Code's projects folder, so the token cannot make it
    read (and archive) any other file its user can read."""
    try:
        data = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return ""  # run_hook says the input is not JSON
    given = data.get("transcript_path") if isinstance(data, dict) else None
    if not isinstance(given, str) or not given:
        return ""
    path = Path(given).expanduser()
    resolved = path.resolve() if path.is_absolute() else None
    if resolved is not None and any(
        resolved.is_relative_to(r.resolve()) for r in claude_projects()
    ):
        return ""
    return f"transcript_path {given} is not under Claude Code's projects folder"


class TooLarge(Exception):
    """A request body over :data:`MAX_BODY_BYTES`."""


async def _body(request: Request) -> bytes:
    """The request body, or :class:`TooLarge` (answered 413) past the limit."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


async def _too_large(request: Request, exc: Exception) -> Response:
    return PlainTextResponse(f"the request is over {MAX_BODY_BYTES:,} bytes", status_code=413)


async def _reap(pool: Pool, idle: Callable[[], None]) -> None:
    """Close idle workspaces (and their MCP servers); call ``idle`` when none is left open for
    ``pool.idle_s``."""
    while True:
        await anyio.sleep(min(REAP_EVERY_S, pool.idle_s / 2))
        for warm in await anyio.to_thread.run_sync(pool.close_idle):
            if warm.mcp is not None:
                warm.mcp[1].cancel()
        if pool.idle_for() >= pool.idle_s:
            idle()
