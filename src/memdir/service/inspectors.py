"""The inspectors the service runs for ``memdir ui`` (docs/design.md#the-per-user-service): each on
127.0.0.1 and a port of its own, over a warm workspace, for as long as a ``memdir ui`` holds it.

``POST /v1/ui?workspace=ABS&port=N[&writable=1]`` (on the Unix socket only) answers with one
line, ``{"url": …}``: the inspector's address with a new one-time sign-in code
(:class:`~memdir.ui.access.Access`), and then keeps the response open. ``memdir ui`` prints the
URL and waits; when it stops (Ctrl-C, kill -9, its terminal closed) the connection closes and
the service lets go of the inspector, which stops once no ``memdir ui`` holds it (issue 35: it
used to run on, without a credential, until the service stopped). A second ``memdir ui`` for the
same workspace, port and mode holds the same inspector and gets a code of its own. ``GET
/v1/health`` lists them. When the service stops, every hold ends and ``memdir ui`` says so.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from memdir.errors import MemdirError
from memdir.service.pool import Pool, WarmWorkspace
from memdir.ui.inspector import UIOptions

log = logging.getLogger("memdir.service")

#: An inspector's workspace, the port it listens on, and whether it is writable.
Key = tuple[Path, int, bool]
#: Seconds between looks at whether the service is stopping, while a hold waits.
STOP_CHECK_S = 0.5


@dataclass
class RunningInspector:
    """One inspector the service serves, and how many ``memdir ui`` hold it."""

    workspace: Path
    writable: bool
    url: str
    #: The port it listens on.
    bound: int
    options: UIOptions
    server: Any  # uvicorn.Server
    holders: int = 0
    started: float = field(default_factory=time.time)

    def describe(self) -> dict[str, object]:
        return {
            "workspace": str(self.workspace),
            "url": self.url,
            "writable": self.writable,
            "held_by": self.holders,
        }


class Inspectors:
    """The running inspectors, by workspace, port and mode.

    Args:
        pool: the warm workspaces (an inspector borrows its workspace per call).
        tasks: the app's task group, where the inspectors' servers run.
        stopping: whether the service is stopping (every hold then ends).
    """

    def __init__(
        self,
        pool: Pool,
        tasks: Callable[[], anyio.abc.TaskGroup],
        stopping: Callable[[], bool],
    ) -> None:
        self.pool = pool
        self.tasks = tasks
        self.stopping = stopping
        self._running: dict[Key, RunningInspector] = {}

    def listed(self) -> list[dict[str, object]]:
        """What ``/v1/health`` shows of them."""
        return [inspector.describe() for inspector in self._running.values()]

    @contextlib.contextmanager
    def held(self, warm: WarmWorkspace, port: int, writable: bool) -> Iterator[RunningInspector]:
        """The inspector of ``warm``'s workspace on ``port`` (started if it is not running),
        held until the block ends; stopped when no one holds it any more.

        Raises:
            MemdirError: the port is taken by something else.
        """
        inspector = next(
            (
                running  # the one on that port, or any for another `memdir ui --port 0`
                for (root, bound, mode), running in self._running.items()
                if root == warm.root and mode == writable and port in (0, bound)
            ),
            None,
        )
        if inspector is None:
            inspector = self._start(warm, port, writable)
        key = (warm.root, inspector.bound, writable)
        self._running[key] = inspector
        inspector.holders += 1
        try:
            yield inspector
        finally:
            inspector.holders -= 1
            if inspector.holders <= 0 and self._running.get(key) is inspector:
                del self._running[key]
                inspector.server.should_exit = True
                log.info("memdir service: inspector of %s (%s) stopped", warm.root, inspector.url)

    def _start(self, warm: WarmWorkspace, port: int, writable: bool) -> RunningInspector:
        import uvicorn

        from memdir.ui.app import create_app as create_ui
        from memdir.ui.server import bind, loopback_hosts

        sock = bind("127.0.0.1", port)
        bound = int(sock.getsockname()[1])
        url = f"http://127.0.0.1:{bound}/"
        options = UIOptions(writable=writable, allowed_hosts=loopback_hosts("127.0.0.1"))
        root, scope = warm.root, warm.scope
        app = create_ui(warm.memory, options, lambda: self.pool.lend(root, scope))

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:  # the service's own handlers stay
                yield

        config = uvicorn.Config(
            app, log_level="warning", access_log=False, lifespan="off", server_header=False
        )
        server = Server(config)
        self.tasks().start_soon(server.serve, [sock])
        log.info("memdir service: inspector of %s on %s", root, url)
        return RunningInspector(root, writable, url, bound, options, server)


class UIEndpoint:
    """``POST /v1/ui``: an inspector's URL with a fresh sign-in code, then the response held
    open for as long as the ``memdir ui`` that asked stays (see the module's docstring)."""

    def __init__(self, inspectors: Inspectors) -> None:
        self.inspectors = inspectors

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        root = request.query_params.get("workspace", "")
        with contextlib.ExitStack() as hold:
            try:
                port = int(request.query_params.get("port", "8765"))
                writable = request.query_params.get("writable") == "1"
                warm = await anyio.to_thread.run_sync(self.inspectors.pool.get, Path(root))
                inspector = hold.enter_context(self.inspectors.held(warm, port, writable))
            except (MemdirError, ValueError) as exc:
                await PlainTextResponse(str(exc), status_code=409)(scope, receive, send)
                return
            url = f"{inspector.url}?token={inspector.options.access.issue()}"
            start = {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/x-ndjson")],
            }
            await send(start)
            line = json.dumps({"url": url, "writable": writable}).encode() + b"\n"
            await send({"type": "http.response.body", "body": line, "more_body": True})
            await self._until_gone(receive)
            with contextlib.suppress(OSError):
                await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _until_gone(self, receive: Receive) -> None:
        """Wait until the client disconnects or the service stops."""
        async with anyio.create_task_group() as tasks:

            async def disconnected() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                tasks.cancel_scope.cancel()

            tasks.start_soon(disconnected)
            while not self.inspectors.stopping():
                await anyio.sleep(STOP_CHECK_S)
            tasks.cancel_scope.cancel()
