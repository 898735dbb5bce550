"""The Starlette application of ``memdir ui``: routes, the shared :class:`Inspector`, errors.

Every page has a JSON twin under ``/api/`` (the same data, for tools and tests) and most pages
an HTML fragment (``?partial=1``) that the page's script swaps in for live updates, so each
piece of HTML is rendered by one Jinja template, with autoescaping, on the server.

All reads and writes go through the one :class:`~memdir.memory.Memory` the app was made with,
one call at a time (its index connection is shared by the worker threads).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from memdir import __version__
from memdir.errors import MemdirError, PathNotAllowed, QueryError, ReadOnly
from memdir.memory import Memory
from memdir.ui import present
from memdir.ui.security import LOOPBACK_NAMES, Guard

T = TypeVar("T")


@dataclass(frozen=True)
class UIOptions:
    """How the inspector runs.

    Attributes:
        writable: allow the actions that write memory (applying a dream run); each still needs
            an explicit confirmation. Off: the inspector only reads.
        token: when set, every request must carry it (required beyond loopback).
        allowed_hosts: Host header names accepted; empty accepts any (with a token).
        csrf: the per-process token a write must carry.
    """

    writable: bool = False
    token: str | None = None
    allowed_hosts: tuple[str, ...] = LOOPBACK_NAMES
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))


NAV = (
    ("search", "/search", "Search"),
    ("files", "/files", "Files"),
    ("index", "/index", "Index"),
    ("dreaming", "/dreaming", "Dreaming"),
    ("history", "/history", "History"),
    ("review", "/review", "Review"),
)


class Inspector:
    """What the views share: the Memory (one call at a time), the options and the templates."""

    def __init__(self, memory: Memory, options: UIOptions) -> None:
        self.memory = memory
        self.options = options
        self.lock = threading.Lock()
        self.templates = Environment(
            loader=PackageLoader("memdir.ui", "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.templates.filters.update(present.FILTERS)
        self.templates.globals.update(
            nav=NAV, version=__version__, file_url=present.file_url, percent=present.percent
        )

    def call(self, fn: Callable[[Memory], T]) -> T:
        """Run ``fn`` on the Memory, one call at a time."""
        with self.lock:
            return fn(self.memory)

    def render(
        self, request: Request, template: str, context: Mapping[str, Any], status: int = 200
    ) -> HTMLResponse:
        """An HTML page (or fragment) from ``template``."""
        html = self.templates.get_template(template).render(
            request=request,
            csrf=self.options.csrf,
            writable=self.options.writable,
            workspace=str(self.memory.workspace.root),
            **context,
        )
        return HTMLResponse(html, status_code=status)


def inspector(request: Request) -> Inspector:
    """The :class:`Inspector` of the app serving ``request``."""
    ui: Inspector = request.app.state.inspector
    return ui


#: The status of each error memdir raises on purpose (the first that matches); others are 500.
_STATUS: tuple[tuple[type[MemdirError], int], ...] = (
    (PathNotAllowed, 403),
    (QueryError, 400),
    (ReadOnly, 409),  # the workspace or the file cannot be written as it is now
)


async def _memdir_error(request: Request, exc: Exception) -> Response:
    status = next((code for kind, code in _STATUS if isinstance(exc, kind)), 500)
    message = str(exc)
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": message}, status_code=status)
    return inspector(request).render(
        request, "error.html", {"active": "", "status": status, "message": message}, status
    )


def _home(request: Request) -> Response:
    return RedirectResponse("/search", status_code=307)


def create_app(memory: Memory, options: UIOptions | None = None) -> Starlette:
    """The inspector over ``memory``: pages, their ``/api/`` JSON twins and static files.

    Args:
        memory: the workspace to show; the caller keeps it open while the app runs.
        options: writability, token, accepted hosts (default: read-only, loopback only).
    """
    from memdir.ui.views import dreaming, files, history, index, review, search

    options = options or UIOptions()
    routes = [
        Route("/", _home),
        Route("/search", search.page),
        Route("/api/search", search.api),
        Route("/files", files.tree_page),
        Route("/files/{path:path}", files.file_page),
        Route("/api/files", files.tree_api),
        Route("/api/files/{path:path}", files.file_api),
        Route("/index", index.page),
        Route("/api/index", index.api),
        Route("/dreaming", dreaming.page),
        Route("/api/dreaming", dreaming.api),
        Route("/api/dreaming/apply", dreaming.apply, methods=["POST"]),
        Route("/history", history.page),
        Route("/api/history", history.api),
        Route("/review", review.page),
        Route("/api/review", review.api),
        Mount("/static", StaticFiles(packages=[("memdir.ui", "static")]), name="static"),
    ]
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(
                Guard,
                csrf=options.csrf,
                token=options.token,
                allowed_hosts=options.allowed_hosts,
            )
        ],
        exception_handlers={MemdirError: _memdir_error},
    )
    app.state.inspector = Inspector(memory, options)
    return app


__all__ = ["NAV", "Inspector", "UIOptions", "create_app", "inspector"]
