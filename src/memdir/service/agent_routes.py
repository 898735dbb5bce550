"""Plain JSON routes for other agents' memory plugins (docs/design.md#the-per-user-service).

A plugin written in another language (OpenClaw's, in JavaScript) talks to the warm service
without an MCP client: one HTTP request a call, JSON in and out, behind the same Host, Origin
and token checks as every other TCP route (:class:`memdir.service.app.Guard`).

- ``POST /v1/tools/<name>?workspace=ABS[&scope=shared]``: a memory tool call (the body is its
  arguments), answered with what ``memdir serve`` answers (:class:`memdir.mcp.server.MemoryTools`:
  the same contract, limits and time limit); a failed call is 422 ``{"error": "…"}``;
- ``POST /v1/recall?workspace=ABS``: ``{"prompt"}`` → ``{"block", "citations", "warning"}``,
  the auto-recall block of the Claude Code hooks (``[hooks] recall_*``), fenced as untrusted data;
- ``POST /v1/capture?workspace=ABS``: ``{"messages": [{"role", "content"}], "session"}`` →
  ``{"captured"}``: auto-capture over the user's messages (the client's own error replies are
  never assistant text worth keeping; capture reads user messages only);
- ``GET /v1/status?workspace=ABS``: what ``memdir status --json`` says of the workspace.

Every workspace must be an absolute path to an existing folder holding memory files, as for
the other routes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from memdir.clock import now
from memdir.deadline import run_with_timeout
from memdir.errors import MemdirError
from memdir.memory.context import recall_for
from memdir.service.pool import Pool, PoolFull

#: The largest JSON body these routes read (a turn's messages for capture included).
MAX_JSON_BYTES = 4 * 1024 * 1024
#: The most user messages one capture request considers.
MAX_CAPTURE_MESSAGES = 200


def agent_routes(pool: Pool) -> list[Route]:
    """The routes of this module over ``pool``'s warm workspaces."""

    async def tool(request: Request) -> Response:
        name = request.path_params["name"]
        where = _workspace(request)
        if isinstance(where, Response):
            return where
        root, scope = where
        args = await _json(request)
        if not isinstance(args, dict):
            return _error("the body must be a JSON object of the tool's arguments", 400)

        def call() -> dict[str, Any]:
            warm = pool.get(root, scope)
            return warm.tools.call(name, args)

        try:
            return JSONResponse(await anyio.to_thread.run_sync(call))
        except MemdirError as exc:
            return _failed(exc)

    async def recall(request: Request) -> Response:
        where = _workspace(request)
        if isinstance(where, Response):
            return where
        root, scope = where
        body = await _json(request)
        prompt = body.get("prompt") if isinstance(body, dict) else None
        if not isinstance(prompt, str):
            return _error('send {"prompt": "…"}', 400)

        def run() -> dict[str, Any]:
            with pool.lend(root, scope) as memory:
                settings = memory.config.hooks
                if not settings.recall:
                    return {"block": "", "citations": [], "warning": None}
                found = run_with_timeout(
                    lambda: recall_for(
                        memory,
                        prompt,
                        limit=settings.recall_max_items,
                        min_score=settings.recall_min_score,
                        max_chars=settings.recall_max_chars,
                    ),
                    settings.recall_timeout,
                    "auto-recall",
                )
            return {
                "block": found.block,
                "citations": list(found.citations),
                "warning": found.warning,
            }

        try:
            return JSONResponse(await anyio.to_thread.run_sync(run))
        except MemdirError as exc:
            return _failed(exc)

    async def capture(request: Request) -> Response:
        where = _workspace(request)
        if isinstance(where, Response):
            return where
        root, scope = where
        body = await _json(request)
        messages = body.get("messages") if isinstance(body, dict) else None
        session = body.get("session") if isinstance(body, dict) else None
        if not isinstance(messages, list):
            return _error('send {"messages": [{"role": "user", "content": "…"}]}', 400)
        said = user_texts(messages)

        def run() -> int:
            with pool.lend(root, scope) as memory:
                taken = memory.capture(session=str(session) if session else None)
                at = now()
                for text in said:
                    taken.consider(text, now=at)
                return sum(1 for result in taken.captured if result.written)

        try:
            return JSONResponse({"captured": await anyio.to_thread.run_sync(run)})
        except MemdirError as exc:
            return _failed(exc)

    async def status(request: Request) -> Response:
        where = _workspace(request)
        if isinstance(where, Response):
            return where
        root, scope = where

        def run() -> dict[str, Any]:
            with pool.lend(root, scope) as memory:
                return memory.status()

        try:
            return JSONResponse(await anyio.to_thread.run_sync(run))
        except MemdirError as exc:
            return _failed(exc)

    return [
        Route("/v1/tools/{name}", tool, methods=["POST"]),
        Route("/v1/recall", recall, methods=["POST"]),
        Route("/v1/capture", capture, methods=["POST"]),
        Route("/v1/status", status, methods=["GET"]),
    ]


def _failed(exc: MemdirError) -> Response:
    """A failed call: 503 when every workspace slot of the service is held (try again), else
    422 with the reason."""
    return _error(str(exc), 503 if isinstance(exc, PoolFull) else 422)


def user_texts(messages: list[Any]) -> list[str]:
    """The text of the user's messages among ``messages`` (``{"role", "content"}``, the content
    a string or a list of ``{"type": "text", "text"}`` parts), at most
    :data:`MAX_CAPTURE_MESSAGES`."""
    texts: list[str] = []
    for message in messages[-MAX_CAPTURE_MESSAGES:]:
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            parts = [
                part.get("text")
                for part in content
                if isinstance(part, dict) and part.get("type") == "text"
            ]
            texts.append("\n".join(p for p in parts if isinstance(p, str)))
    return [t for t in texts if t.strip()]


def _workspace(request: Request) -> tuple[Path, str] | Response:
    root = request.query_params.get("workspace", "")
    scope = request.query_params.get("scope", "private")
    if not root or not Path(root).is_absolute() or scope not in ("private", "shared"):
        return _error("name the workspace: ?workspace=/absolute/path[&scope=shared]", 400)
    from memdir.workspace.layout import is_workspace

    path = Path(root)
    if not path.is_dir() or not is_workspace(path):
        return _error(
            f"{root} is not a memdir workspace (no MEMORY.md, memory/ or .memdir/): "
            f"run `memdir init {root}`",
            404,
        )
    return path, scope


async def _json(request: Request) -> Any:
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_JSON_BYTES:
            return None
    try:
        return json.loads(raw) if raw.strip() else {}
    except ValueError:
        return None


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)
