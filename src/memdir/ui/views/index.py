"""``/index``: files, chunks, vectors still to embed (with progress), the model, and what the
index warns about — from :meth:`Memory.status`, refreshed live by the page while it changes."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from memdir.ui.inspector import inspector


def api(request: Request) -> Response:
    """``GET /api/index``: :meth:`Memory.status` as JSON (``memdir status --json``)."""
    return JSONResponse(inspector(request).call(lambda m: m.status()))


def _progress(status: dict[str, Any]) -> dict[str, Any]:
    vectors = int(status.get("vectors", 0))
    pending = int(status.get("pending_vectors", 0))
    total = vectors + pending
    return {
        "done": vectors,
        "pending": pending,
        "total": total,
        "share": vectors / total if total else 1.0,
        "busy": bool(pending or status.get("dirty_files") or status.get("deleted_files")),
    }


def page(request: Request) -> Response:
    """``GET /index`` (``?partial=1``: the live part only)."""
    ui = inspector(request)
    status = ui.call(lambda m: m.status())
    context = {
        "active": "index",
        "status": status,
        "progress": _progress(status),
        "warnings": sorted(status.get("file_warnings", {}).items()),
    }
    partial = request.query_params.get("partial") == "1"
    return ui.render(request, "_index_body.html" if partial else "index.html", context)
