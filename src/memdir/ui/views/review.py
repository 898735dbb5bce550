"""``/review?since=7d|30d|all``: the weekly review of :meth:`Memory.review` (``memdir review``):
likely contradictions and near duplicates with both places, old open todos, the MEMORY.md
budget, daily notes never recalled, files not indexed. It only reads."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from memdir.ui.inspector import inspector


def _since(request: Request) -> str:
    return request.query_params.get("since") or "7d"


def api(request: Request) -> Response:
    """``GET /api/review?since=…``: ``memdir review --json``."""
    since = _since(request)
    report = inspector(request).call(lambda m: m.review(since=since))
    return JSONResponse(report.to_dict())


def page(request: Request) -> Response:
    """``GET /review?since=…``."""
    ui = inspector(request)
    since = _since(request)
    report = ui.call(lambda m: m.review(since=since))
    context = {"active": "review", "since": since, "report": report}
    return ui.render(request, "review.html", context)
