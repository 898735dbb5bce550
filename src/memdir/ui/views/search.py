"""``/search?q=…``: live results with path#lines, highlighted snippets and each score's parts
(the data of ``memdir search --json --explain``).

Searches from the inspector are not recorded as recalls: a person looking is not the agent
remembering, and dreaming must not promote what someone browsed.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from memdir.config.settings import MAX_RESULTS
from memdir.errors import QueryError
from memdir.search.types import SearchResponse
from memdir.ui import present
from memdir.ui.inspector import inspector


def _params(request: Request) -> tuple[str, int | None, float | None]:
    params = request.query_params
    try:
        n = int(params["n"]) if params.get("n") else None
        min_score = float(params["min_score"]) if params.get("min_score") else None
    except ValueError:
        raise QueryError("n must be a whole number and min_score a number") from None
    if n is not None and not 1 <= n <= MAX_RESULTS:
        raise QueryError(f"n must be between 1 and {MAX_RESULTS}")
    if min_score is not None and not 0.0 <= min_score <= 1.0:
        raise QueryError("min_score must be between 0 and 1")
    return params.get("q", ""), n, min_score


def _search(request: Request) -> tuple[str, SearchResponse | None]:
    query, n, min_score = _params(request)
    if not query.strip():
        return query, None
    response = inspector(request).call(
        lambda m: m.search(query, max_results=n, min_score=min_score, record=False)
    )
    return query, response


def api(request: Request) -> Response:
    """``GET /api/search?q=…&n=…&min_score=…``: the search response with every score's parts."""
    _, response = _search(request)
    if response is None:
        raise QueryError("q is empty: give a query, e.g. /api/search?q=redis")
    return JSONResponse(response.to_dict(explain=True))


def page(request: Request) -> Response:
    """``GET /search?q=…`` (``&partial=1``: the results only, for the live search box)."""
    ui = inspector(request)
    query, response = _search(request)
    context: dict[str, Any] = {"active": "search", "q": query, "response": response, "hits": []}
    if response is not None:
        config = ui.call(lambda memory: memory.config.search)
        context["scoring"] = present.scoring_note(config, response.mode, response.calibrated)
        context["hits"] = [
            {
                "hit": hit,
                "url": present.file_url(hit.path, hit.start_line, hit.end_line),
                "snippet": present.highlight(hit.snippet, response.terms),
                "parts": present.score_parts(hit.explain),
                "sum": present.score_sum(config, response.mode, hit.explain, hit.score),
            }
            for hit in response.results
        ]
    partial = request.query_params.get("partial") == "1"
    return ui.render(request, "_results.html" if partial else "search.html", context)
