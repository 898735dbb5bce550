"""``/files`` (the workspace tree) and ``/files/<path>`` (a file with line numbers; ``?lines=a-b``
marks a range and ``#La`` scrolls to it).

Paths are read with :meth:`Memory.read`: the ``memory_get`` policy (MEMORY.md, ``memory/**``,
``skills/**``, extra paths; ``.md`` only; no ``..``, no symlink) plus USER.md, AGENTS.md and
DREAMS.md.
"""

from __future__ import annotations

from itertools import groupby
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from memdir.errors import QueryError
from memdir.memory.browse import GetResult, MemoryFile
from memdir.memory.facade import Memory
from memdir.ui.inspector import inspector
from memdir.workspace.layout import MEMORY_FILE

#: Lines shown on one page of a file view; longer files get previous/next links.
PAGE_LINES = 2000

#: Groups of the tree, in order: (title, kinds).
GROUPS = (
    ("Core", ("memory", "user", "agents", "dreams")),
    ("Daily logs", ("daily",)),
    ("Session archives", ("archive",)),
    ("Topic notes", ("topic",)),
    ("Skills", ("skill",)),
    ("Extra paths", ("extra",)),
)


def tree_api(request: Request) -> Response:
    """``GET /api/files``: every file with its kind, date, size, time and index state."""
    files = inspector(request).call(lambda m: m.files())
    return JSONResponse({"files": [f.to_dict() for f in files]})


def _grouped(files: list[MemoryFile]) -> list[dict[str, Any]]:
    groups = []
    for title, kinds in GROUPS:
        members = sorted(
            (f for f in files if f.kind in kinds), key=lambda f: (kinds.index(f.kind), f.path)
        )
        if not members:
            continue
        if title in ("Daily logs", "Session archives"):
            members.sort(key=lambda f: (f.day or "", f.path), reverse=True)
            months = [
                {"month": month, "files": list(items)}
                for month, items in groupby(members, key=lambda f: (f.day or "")[:7])
            ]
            groups.append({"title": title, "files": members, "months": months})
        else:
            groups.append({"title": title, "files": members, "months": []})
    return groups


def tree_page(request: Request) -> Response:
    """``GET /files``: the workspace tree, grouped by kind, daily logs by month."""
    ui = inspector(request)
    files = ui.call(lambda m: m.files())
    context = {"active": "files", "groups": _grouped(files), "count": len(files)}
    return ui.render(request, "files.html", context)


def _range(request: Request) -> tuple[int, int] | None:
    value = request.query_params.get("lines", "")
    if not value:
        return None
    first, _, last = value.partition("-")
    try:
        start = int(first)
        end = int(last) if last else start
    except ValueError:
        raise QueryError(f"lines={value!r}: give a line or a range, e.g. lines=12-18") from None
    if start < 1 or end < start:
        raise QueryError(f"lines={value!r}: lines start at 1 and a range must not go backwards")
    return start, end


def _read(memory: Memory, path: str) -> tuple[GetResult, list[int]]:
    result = memory.read(path)
    generated: list[int] = []
    if result.path == MEMORY_FILE and result.exists:
        generated = memory.memory_budget().generated_lines
    return result, generated


def file_api(request: Request) -> Response:
    """``GET /api/files/<path>``: the file's text (``memory_get``'s shape, plus owner files)."""
    path = request.path_params["path"]
    result = inspector(request).call(lambda m: m.read(path))
    return JSONResponse(result.to_dict())


def file_page(request: Request) -> Response:
    """``GET /files/<path>?lines=a-b&from=n``: the file with line numbers and anchors."""
    ui = inspector(request)
    path = request.path_params["path"]
    marked = _range(request)
    result, generated = ui.call(lambda m: _read(m, path))
    lines = result.text.split("\n") if result.text else []
    if result.text.endswith("\n"):
        lines.pop()
    try:
        first = int(request.query_params.get("from", "0"))
    except ValueError:
        raise QueryError("from must be a line number") from None
    if first < 1:  # not asked: start at the page holding the marked range
        first = 1 if marked is None else max(1, marked[0] - PAGE_LINES // 4)
    last = min(len(lines), first + PAGE_LINES - 1)
    gen = set(generated)
    rows = [
        {
            "n": n,
            "text": lines[n - 1],
            "marked": marked is not None and marked[0] <= n <= marked[1],
            "generated": n in gen,
        }
        for n in range(first, last + 1)
    ]
    context = {
        "active": "files",
        "file": result,
        "rows": rows,
        "marked": marked,
        "previous": max(1, first - PAGE_LINES) if first > 1 else None,
        "next": last + 1 if last < len(lines) else None,
        "has_generated": bool(gen),
    }
    return ui.render(request, "file.html", context)
