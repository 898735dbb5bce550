"""The Starlette application of ``memdir ui``: its routes and its error pages. The views it
routes to share the :class:`~memdir.ui.inspector.Inspector`.

Every page has a JSON twin under ``/api/`` (the same data, for tools and tests) and most pages
an HTML fragment (``?partial=1``) that the page's script swaps in for live updates, so each
piece of HTML is rendered by one Jinja template, with autoescaping, on the server.

All reads and writes go through the one :class:`~memdir.memory.facade.Memory` the app was made with,
one call at a time (its index connection is shared by the worker threads).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from memdir.errors import MemdirError, PathNotAllowed, QueryError, ReadOnly
from memdir.memory.facade import Memory
from memdir.ui.inspector import Inspector, UIOptions, inspector
from memdir.ui.security import Guard
from memdir.ui.views import dreaming, files, history, index, review, search

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


def create_app(
    memory: Memory,
    options: UIOptions | None = None,
    lender: Callable[[], AbstractContextManager[Memory]] | None = None,
) -> Starlette:
    """The inspector over ``memory``: pages, their ``/api/`` JSON twins and static files.

    Args:
        memory: the workspace to show; the caller keeps it open while the app runs.
        options: writability, sign-in, token, accepted hosts (default: read-only, loopback
            only, a session needed: :attr:`UIOptions.access` issues the sign-in codes).
    """
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
                access=options.access,
                token=options.token,
                allowed_hosts=options.allowed_hosts,
            )
        ],
        exception_handlers={MemdirError: _memdir_error},
    )
    app.state.inspector = Inspector(memory, options, lender)
    return app


__all__ = ["create_app"]
