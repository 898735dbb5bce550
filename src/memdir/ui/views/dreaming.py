"""``/dreaming``: recall counts per entry, each candidate's six factor scores and the gates it
passes or fails, the MEMORY.md budget (person-written vs generated), the last runs, and a
preview of a dream run. Applying it (``POST /api/dreaming/apply``) needs ``memdir ui
--writable``, the inspector's session and the page's CSRF token (:mod:`memdir.ui.security`), and
a fresh confirmation: the code issued for the preview the person saw
(:class:`~memdir.ui.access.Confirmations`), taken once and within 10 minutes. A code spent or
too old, or a preview out of date (MEMORY.md edited, new recalls) is refused with 409 and the
person previews again.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from memdir.dreaming import DreamReport
from memdir.errors import QueryError
from memdir.memory.facade import Memory
from memdir.ui.inspector import inspector

GATES = ("manual", "schedule")
#: How many past runs the page lists.
RUNS_SHOWN = 10


def confirmation(report: DreamReport) -> str:
    """A digest naming exactly what an apply of ``report``'s preview would write (a
    confirmation code is issued for it: :class:`~memdir.ui.access.Confirmations`)."""
    p = report.promotion
    payload = {
        "gates": report.gates.name,
        "outcomes": [[o.key, o.status, o.lines] for o in p.outcomes],
        "evicted": p.evicted,
        "chars": [p.chars_before, p.chars_after],
    }
    raw = json.dumps(payload, ensure_ascii=False, sort_keys=True).encode()
    return hashlib.sha256(raw).hexdigest()[:16]


def _gates(value: str | None) -> str:
    gates = value or "manual"
    if gates not in GATES:
        raise QueryError(f"gates must be manual or schedule, not {gates!r}")
    return gates


def _state(memory: Memory, gates: str) -> dict[str, Any]:
    report = memory.dream(apply=False, schedule=gates == "schedule")
    runs = [e for e in memory.history(limit=200) if e.kind in ("dream", "diary")][:RUNS_SHOWN]
    return {"report": report, "budget": memory.memory_budget(), "runs": runs}


def api(request: Request) -> Response:
    """``GET /api/dreaming?gates=manual|schedule``: the preview report (``memdir dream
    --json``), the budget, the last runs and the confirmation code of this preview."""
    ui = inspector(request)
    gates = _gates(request.query_params.get("gates"))
    state = ui.call(lambda m: _state(m, gates))
    report: DreamReport = state["report"]
    return JSONResponse(
        {
            "report": report.to_dict(),
            "budget": state["budget"].to_dict(),
            "runs": [e.to_dict() for e in state["runs"]],
            "confirm": ui.confirmations.issue(confirmation(report)),
        }
    )


def page(request: Request) -> Response:
    """``GET /dreaming?gates=…&preview=1`` (``partial=preview``: the preview section only)."""
    ui = inspector(request)
    gates = _gates(request.query_params.get("gates"))
    state = ui.call(lambda m: _state(m, gates))
    report: DreamReport = state["report"]
    open_candidates = [c for c in report.candidates if c.entry.promoted_at is None]
    context = {
        "active": "dreaming",
        "gates": gates,
        "report": report,
        "open_candidates": open_candidates,
        "promoted_earlier": len(report.candidates) - len(open_candidates),
        "selected": [c for c in open_candidates if c.selected],
        "budget": state["budget"],
        "runs": state["runs"],
        "confirm": ui.confirmations.issue(confirmation(report)),
        "show_preview": request.query_params.get("preview") == "1",
    }
    if request.query_params.get("partial") == "preview":
        return ui.render(request, "_dream_preview.html", context)
    return ui.render(request, "dreaming.html", context)


async def apply(request: Request) -> Response:
    """``POST /api/dreaming/apply`` with ``{"gates", "confirm", "diary"}``: run the dream that
    was previewed and write MEMORY.md. 403 when the inspector is read-only, 409 when the
    preview is out of date."""
    ui = inspector(request)
    if not ui.options.writable:
        return JSONResponse(
            {
                "error": "the inspector is read-only: restart it with `memdir ui --writable` to "
                "apply a dream run (or run `memdir dream --apply`)"
            },
            status_code=403,
        )
    try:
        body = await request.json()
    except ValueError:
        body = None
    if not isinstance(body, dict) or not isinstance(body.get("confirm"), str):
        raise QueryError('send {"gates": "manual", "confirm": CODE} with the preview\'s code')
    gates = _gates(body.get("gates"))
    diary = bool(body.get("diary", False))
    previewed = ui.confirmations.take(body["confirm"])  # spent now, whatever follows
    if previewed is None:
        return JSONResponse(
            {
                "error": "this confirmation was used already or is over 10 minutes old "
                "(or not this inspector's): preview again, then apply"
            },
            status_code=409,
        )

    def run(memory: Memory) -> DreamReport | None:
        current = confirmation(memory.dream(apply=False, schedule=gates == "schedule"))
        if current != previewed:
            return None
        return memory.dream(apply=True, schedule=gates == "schedule", diary=diary)

    report = await run_in_threadpool(ui.call, run)
    if report is None:
        return JSONResponse(
            {"error": "memory changed since this preview: preview again, then apply"},
            status_code=409,
        )
    return JSONResponse({"report": report.to_dict(), "summary": report.summary()})
