"""The service's routes, every one behind the Host and token checks (:class:`Guard`).

On the Unix socket (only its user can connect: docs/design.md#the-per-user-service):

- ``POST /v1/cli``: a thin client's command (:mod:`memdir.service.commands`); 409 with the
  reason when the service declines it (the client then runs it itself);
- ``POST /v1/ui?workspace=ABS&port=N[&writable=1]``: the inspector (``memdir ui``) of the warm
  workspace on 127.0.0.1:N, in this process, so it shows the live index and embedding; its URL
  with a one-time sign-in code, the answer held open while that ``memdir ui`` runs
  (:mod:`memdir.service.inspectors`);
- ``POST /v1/shutdown``.

On the Unix socket and on 127.0.0.1 (TCP, what Claude Code reaches):

- ``POST /v1/hooks/claude-code/<event>?workspace=ABS``: Claude Code's HTTP hooks
  (``user-prompt-submit``, ``pre-compact``, ``session-end``, ``session-start``): the hook's JSON
  in, the reply Claude Code reads out (an empty body: nothing to add), as ``memdir hook``;
- ``/mcp?workspace=ABS[&scope=shared]``: the MCP server over streamable HTTP, the tools of
  ``memdir serve`` on the warm workspace;
- ``GET /v1/health``: version, pid and the served workspaces;
- the JSON routes of other agents' plugins (:mod:`memdir.service.agent_routes`).

The TCP port has its own router without the socket's routes (404 there, whatever the path
looks like): a command run for a client may read any file its user can (``hook session-end``
archives the transcript it names), which only the user's own processes may ask for.

A workspace is one the service can open: an absolute path to an existing folder; its private
files follow the scope, as over stdio. The guard refuses a request whose Host is not the
loopback address and port the service listens on (a web page cannot reach it by DNS rebinding),
whose ``Origin`` is a web page's (:mod:`memdir.service.origins`), or that lacks
``Authorization: Bearer <token>``, the token its file holds now
(:class:`~memdir.service.state.TokenFile`: a rotated token works at once, the old one no more).
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import os
from collections.abc import AsyncIterator, Callable
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
from memdir.mcp.server import build_server
from memdir.service.agent_routes import agent_routes
from memdir.service.commands import Declined, decode_request, run_command
from memdir.service.inspectors import Inspectors, UIEndpoint
from memdir.service.origins import origin_allowed
from memdir.service.pool import Pool, PoolFull, WarmWorkspace
from memdir.service.protocol import ACK, DECLINED
from memdir.service.team_sync import TICK_S as TEAM_TICK_S
from memdir.service.team_sync import TeamSyncer
from memdir.workspace.layout import refuse_home_folder

log = logging.getLogger("memdir.service")
#: Seconds between looks for idle workspaces.
REAP_EVERY_S = 60.0
#: The largest request body read (a hook's transcript is read from its path, not sent).
MAX_BODY_BYTES = MAX_INPUT_BYTES + (1 << 20)
MCP_METHODS = ["GET", "POST", "DELETE"]


class Guard:
    """Refuses what is not for this service: a Host other than the loopback address and port
    it listens on, a missing or wrong bearer token, anything but HTTP."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: Callable[[], str],
        port: Callable[[], int],
        tcp_app: ASGIApp | None = None,
    ) -> None:
        self.app = app
        self.tcp_app = tcp_app if tcp_app is not None else app
        self.token = token
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
        # The Unix socket has a path and no port (uvicorn); anything else counts as TCP.
        local_socket = server is not None and server[1] is None
        if not local_socket and headers.get(b"host") not in hosts:
            await PlainTextResponse("wrong Host", status_code=421)(scope, receive, send)
            return
        if not local_socket and not origin_allowed(headers.get(b"origin")):
            await PlainTextResponse("Origin not allowed", status_code=403)(scope, receive, send)
            return
        token = self.token().encode("ascii", "replace")
        given = headers.get(b"authorization", b"")
        if not token or not hmac.compare_digest(given, b"Bearer " + token):
            answer = PlainTextResponse("a bearer token is required", status_code=401)
            await answer(scope, receive, send)
            return
        await (self.app if local_socket else self.tcp_app)(scope, receive, send)


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
        except PoolFull as exc:
            await PlainTextResponse(str(exc), status_code=503)(scope, receive, send)
            return
        except MemdirError as exc:
            await PlainTextResponse(str(exc), status_code=404)(scope, receive, send)
            return
        finally:
            _forget_closed(self.pool.take_closed())
        manager = await self._manager(warm)
        try:
            await manager.handle_request(scope, receive, send)
        finally:
            if warm.closed:  # closed meanwhile (the least recently used): its server goes too
                _forget_closed([warm])

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
    pool: Pool, *, token: Callable[[], str], port: Callable[[], int], exit_when_idle: bool = False
) -> Guard:
    """The service as an ASGI app (see the module's docstring); set ``app.state["stop"]`` to
    what stops the server.

    Args:
        pool: the warm workspaces.
        token: the bearer token every request must carry, as it is now.
        port: the port the service listens on (known once bound).
        exit_when_idle: stop once no workspace was used for ``pool.idle_s`` (a service
            started on demand).
    """
    state: dict[str, Any] = {"stop": lambda: None, "stopping": lambda: False}
    inspectors = Inspectors(pool, lambda: state["tasks"], lambda: state["stopping"]())

    def idle() -> None:
        if exit_when_idle and not inspectors.listed():  # a `memdir ui` still holds one
            state["stop"]()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tasks:
            state["tasks"] = tasks
            tasks.start_soon(_reap, pool, idle)
            tasks.start_soon(_team_sync, pool)
            try:
                yield
            finally:
                tasks.cancel_scope.cancel()
        await anyio.to_thread.run_sync(pool.close)

    async def health(request: Request) -> Response:
        served = [{"workspace": str(w.root), "scope": w.scope} for w in pool.served()]
        return JSONResponse(
            {
                "version": __version__,
                "pid": os.getpid(),
                "served": served,
                "max_workspaces": pool.max_open,
                "inspectors": inspectors.listed(),
            }
        )

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
        try:
            refuse_home_folder(Path(root))
        except MemdirError as exc:  # a hook's own failures are notes; this one is the caller's
            return PlainTextResponse(str(exc), status_code=400)
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

    shared = [
        Route("/v1/health", health, methods=["GET"]),
        Route("/v1/hooks/claude-code/{event}", hook, methods=["POST"]),
        Route("/mcp", MCPEndpoint(pool, lambda: state["tasks"]), methods=MCP_METHODS),
        *agent_routes(pool),
    ]
    socket_only = [
        Route("/v1/shutdown", shutdown, methods=["POST"]),
        Route("/v1/ui", UIEndpoint(inspectors), methods=["POST"]),
        Route("/v1/cli", cli, methods=["POST"]),
    ]
    handlers = {TooLarge: _too_large}
    app = Starlette(routes=[*shared, *socket_only], lifespan=lifespan, exception_handlers=handlers)
    tcp_app = Starlette(routes=shared, exception_handlers=handlers)
    guard = Guard(app, token=token, port=port, tcp_app=tcp_app)
    guard.state = state
    return guard


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
        _forget_closed(await anyio.to_thread.run_sync(pool.close_idle))
        if pool.idle_for() >= pool.idle_s:
            idle()


async def _team_sync(pool: Pool) -> None:
    """Sync the open workspaces with their team's remote (:mod:`memdir.service.team_sync`)."""
    syncer = TeamSyncer()
    while True:
        await anyio.sleep(TEAM_TICK_S)
        await anyio.to_thread.run_sync(syncer.tick, pool)


def _forget_closed(closed: list[WarmWorkspace]) -> None:
    """Stop the MCP servers of closed workspaces (on the event loop, where they run)."""
    for warm in closed:
        if warm.mcp is not None:
            warm.mcp[1].cancel()
            warm.mcp = None
