"""Turning memdir's data into what the pages show: links, highlighted snippets, score parts,
sizes and times. Pure functions; the templates escape everything else.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

from markupsafe import Markup, escape

from memdir.config.settings import SearchConfig
from memdir.text import term_spans

#: Labels of the ``--explain`` parts of a search score, in the order they are shown; parts not
#: named here follow as they come (a new stage adds its part without a change here).
SCORE_PARTS: dict[str, str] = {
    "vector": "vector",
    "text": "keyword",
    "decay": "decay",
    "age_days": "age",
    "fused": "fused",
    "coverage": "term coverage",
    "gap": "below the best vector",
    "text_share": "keyword vs the best",
    "unknown": "unknown query words",
    "vector_estimated": "vector estimated",
    "echo_of": "quotes",
    "mmr_rank": "MMR rank",
    "rerank": "rerank",
    "focus_line": "best line",
    "query": "found by",
}


def file_url(path: str, start: int | None = None, end: int | None = None) -> str:
    """The inspector's URL of a file, at a line range when given (``#L12`` anchors the line)."""
    url = "/files/" + quote(path, safe="/")
    if start is None:
        return url
    last = end if end is not None and end >= start else start
    return f"{url}?lines={start}-{last}#L{start}"


def highlight(text: str, terms: Sequence[str]) -> Markup:
    """``text`` escaped, with the search terms in ``<mark>``."""
    out: list[str] = []
    pos = 0
    for start, end in term_spans(text, terms):
        out.append(str(escape(text[pos:start])))
        out.append(f"<mark>{escape(text[start:end])}</mark>")
        pos = end
    out.append(str(escape(text[pos:])))
    return Markup("".join(out))


def score_parts(explain: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The parts of a search score as rows: ``label``, ``text`` and, for a part in [0, 1],
    ``fraction`` (drawn as a bar)."""
    rows = []
    # The relevance model's own parts (memdir.search.relevance) beside the search's, once each.
    nested = explain.get("parts")
    flat = {k: v for k, v in explain.items() if k != "parts"}
    if isinstance(nested, Mapping):
        flat.update({k: v for k, v in nested.items() if k not in flat})
    explain = flat
    known = [k for k in SCORE_PARTS if k in explain]
    for key in [*known, *(k for k in explain if k not in SCORE_PARTS)]:
        value = explain[key]
        label = SCORE_PARTS.get(key, key.replace("_", " "))
        fraction: float | None = None
        if key == "age_days":
            # None: not a dated note, or decay is off (search.decay) and ages are not computed.
            text = "—" if value is None else f"{value:g} days"
        elif key == "mmr_rank":
            text = "—" if value is None else f"#{value}"
        elif key == "focus_line":
            text = "—" if value is None else f"L{value}"
        elif isinstance(value, bool) or value is None:
            text = "—" if value is None else str(value).lower()
        elif isinstance(value, int | float):
            text = f"{value:.3f}"
            if 0.0 <= value <= 1.0:
                fraction = float(value)
        else:
            text = str(value)
        rows.append({"key": key, "label": label, "text": text, "fraction": fraction})
    return rows


def scoring_note(config: SearchConfig, mode: str, calibrated: bool = False) -> str:
    """How the scores of a search in ``mode`` are made, in one line (``calibrated``: the score
    shown is the calibrated relevance of the parts, see :mod:`memdir.search.relevance`)."""
    if mode == "keyword":
        note = (
            "keyword-only: 0.45·term coverage + 0.35·BM25 (to the best) + 0.1·density "
            "+ 0.1·path match"
        )
    elif config.fusion == "rrf":
        note = (
            f"reciprocal rank fusion: {config.vector_weight:g}/({config.rrf_k}+vector rank) + "
            f"{config.text_weight:g}/({config.rrf_k}+keyword rank), normalised"
        )
    elif calibrated:
        note = (
            f"ranked by fused = {config.vector_weight:g}·vector + {config.text_weight:g}·keyword; "
            "the score is the estimated chance the snippet answers the query (from its vector, "
            "how far below the best vector, keyword, term coverage and the query's unknown "
            "words; keyword parts alone while its vector is pending)"
        )
    else:
        note = f"score = {config.vector_weight:g}·vector + {config.text_weight:g}·keyword"
    if config.decay:
        note += f", × decay (daily logs, half-life {config.half_life_days:g} days)"
    if config.mmr:
        note += f"; MMR (λ {config.mmr_lambda:g}) orders for diversity"
    return note


def score_sum(config: SearchConfig, mode: str, explain: Mapping[str, Any], score: float) -> str:
    """The arithmetic of a weighted hybrid score (``0.7×0.62 + 0.3×0.41 = 0.557``), shown only
    when it gives the fused score back (``explain["fused"]``; the score itself when there is
    none); empty otherwise (other fusions, other stages)."""
    if mode != "hybrid" or config.fusion != "weighted":
        return ""
    fused = explain.get("fused", score)
    if isinstance(fused, int | float) and not isinstance(fused, bool):
        score = float(fused)
    vector, text, decay = explain.get("vector"), explain.get("text"), explain.get("decay", 1.0)
    if not all(isinstance(v, int | float) for v in (vector, text, decay)):
        return ""
    assert isinstance(vector, int | float) and isinstance(text, int | float)
    total = (config.vector_weight * vector + config.text_weight * text) * float(decay or 0.0)
    if not math.isclose(total, score, abs_tol=5e-6):
        return ""
    sum_text = f"{config.vector_weight:g}×{vector:.3f} + {config.text_weight:g}×{text:.3f}"
    if decay != 1.0:
        sum_text = f"({sum_text}) × {decay:.3f}"
    prefix = "fused: " if "fused" in explain else ""
    return f"{prefix}{sum_text} = {score:.3f}"


def size(n: int) -> str:
    """Bytes for people: ``812 B``, ``12.4 KB``, ``3.1 MB``."""
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / 1024 / 1024:.1f} MB"


def when(value: float | str | datetime | None) -> str:
    """A time as ``2026-11-30 14:02`` (a date stays a date)."""
    if value is None or value == "":
        return "—"
    if isinstance(value, int | float):
        value = datetime.fromtimestamp(value)
    if isinstance(value, str):
        return value.replace("T", " ")
    return value.strftime("%Y-%m-%d %H:%M")


def duration(seconds: float) -> str:
    """``42 s``, ``7 min``, ``2.5 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def number(value: int | float) -> str:
    """``12,345``."""
    return f"{value:,}"


def percent(part: float, whole: float) -> str:
    """``part`` of ``whole`` in percent, within 0–100 (``37.5``: an SVG width in a 0–100
    viewBox; the pages draw bars with SVG because the CSP allows no inline style)."""
    if whole <= 0:
        return "0"
    return f"{max(0.0, min(100.0, 100.0 * part / whole)):.1f}"


FILTERS: dict[str, Callable[..., Any]] = {
    "duration": duration,
    "highlight": highlight,
    "score_parts": score_parts,
    "size": size,
    "when": when,
    "number": number,
}

__all__ = [
    "FILTERS",
    "SCORE_PARTS",
    "duration",
    "file_url",
    "highlight",
    "number",
    "percent",
    "score_parts",
    "score_sum",
    "scoring_note",
    "size",
    "when",
]
