"""``/history``: what memdir wrote on its own and when, newest first, from :meth:`Memory.history`:
the audit trail (flush, capture, extract, archive, dream, write, forget… as git commits or
``.memdir/audit.jsonl``) and the files' own records (dream markers, the diary, archive headers,
daily logs)."""

from __future__ import annotations

from itertools import groupby
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from memdir.audit.records import COMPONENTS
from memdir.errors import QueryError
from memdir.ui.inspector import inspector

#: Most events a page or the API lists.
MAX_EVENTS = 500

#: Event kinds: the audit trail's components, and the two kinds only files record.
KINDS = {**{c: c for c in COMPONENTS}, "diary": "dream diary", "daily": "daily logs"}


def _kind(request: Request) -> str | None:
    kind = request.query_params.get("kind") or None
    if kind is not None and kind not in KINDS:
        raise QueryError(f"kind must be one of {', '.join(KINDS)}")
    return kind


def api(request: Request) -> Response:
    """``GET /api/history?kind=…``: the events, newest first."""
    kind = _kind(request)
    events = inspector(request).call(lambda m: m.history(limit=MAX_EVENTS))
    return JSONResponse({"events": [e.to_dict() for e in events if kind in (None, e.kind)]})


def page(request: Request) -> Response:
    """``GET /history?kind=…``: the events grouped by day."""
    ui = inspector(request)
    kind = _kind(request)
    found = ui.call(lambda m: m.history(limit=MAX_EVENTS))
    events = [e for e in found if kind in (None, e.kind)]
    by_day = groupby(events, key=lambda e: e.when[:10])
    days = [{"day": day, "events": list(items)} for day, items in by_day]
    present = {e.kind for e in found} | ({kind} if kind else set())
    shown_kinds = {k: label for k, label in KINDS.items() if k in present}
    context: dict[str, Any] = {"active": "history", "kind": kind, "kinds": shown_kinds}
    context["days"] = days
    context["count"] = len(events)
    context["capped"] = len(found) >= MAX_EVENTS
    return ui.render(request, "history.html", context)
