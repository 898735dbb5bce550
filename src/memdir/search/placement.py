"""From ranked chunks to what an agent reads (docs/design.md#search, step 8): results that never
show a line twice, widened with neighbouring lines (or, for a piece of a long line, the text
around it) up to the snippet budget, and the best window of a chunk too long to show whole.

:func:`place_results` is the last stage of :func:`memdir.search.pipeline.run_search` (before
the rerank stage, which reorders placed passages).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from memdir.index.base import ChunkRow
from memdir.markdown.chunking import SENTENCE_ENDS
from memdir.markdown.structure import PACK_TOKENS, block_spans, heading_title, split_context
from memdir.search.answers import Slot, answer_lines
from memdir.search.terms import found_tokens
from memdir.search.types import Candidate, LinesOf, SearchResult
from memdir.text import estimate_tokens


def make_snippet(text: str, weights: Mapping[str, float], limit: int) -> str:
    """Up to ``limit`` chars of ``text``: the whole chunk if it fits, else the window of whole
    lines whose query terms weigh the most (``weights``: term → weight, e.g. its rarity)."""
    if len(text) <= limit:
        return text
    lines = text.split("\n")
    # Each line's distinct terms in first-seen order: a sum over a set would add the floats in
    # an order that depends on PYTHONHASHSEED, and a tie between windows would go either way.
    line_weights = [
        sum(weights.get(t, 0.0) for t in dict.fromkeys(found_tokens(line, weights)))
        for line in lines
    ]
    best_start, best_weight = 0, -1.0
    for start in range(len(lines)):
        size, weight = 0, 0.0
        for i in range(start, len(lines)):
            size += len(lines[i]) + 1
            if size > limit and i > start:
                break
            weight += line_weights[i]
        if weight > best_weight:
            best_start, best_weight = start, weight
    return "\n".join(lines[best_start:])[:limit]


def place_results(
    ranked: Sequence[Candidate],
    k: int,
    weights: Mapping[str, float],
    budget: int,
    lines_of: LinesOf | None = None,
    tight: Callable[[str], bool] | None = None,
    slot: Slot | None = None,
) -> list[SearchResult]:
    """Turn ranked chunks into at most ``k`` results that never repeat a line.

    Chunks overlap, so the next-best chunk often shares lines with one already chosen: it is
    trimmed to its longest run of lines not yet shown (the run holding its focus line, when it
    has one; dropped when nothing is left). A run longer than the budget is cut to the lines
    around the focus line (:attr:`memdir.search.types.Candidate.focus_line`). Then,
    when ``lines_of`` can read the file and the chunk still matches it, the result is widened
    with the neighbouring lines below and above, one at a time, while the text stays within
    ``budget`` characters and shows no line twice. A chunk longer than the budget keeps its
    range and gets the best window of it as its snippet (:func:`make_snippet`). A chunk of a
    file for which ``tight(path)`` is true (a structured note: one list item or paragraph a
    chunk) is shown without its neighbours, with its headings as the result's ``context``;
    when it packs several blocks, only those holding the query's words are shown
    (:func:`_matching_blocks`). Any other result (a window of a daily log, a session
    archive) cites the lines of its snippet that answer
    (:func:`~memdir.search.answers.answer_lines`, with ``slot``, what the question asks for),
    and shows the window around them.
    """
    shown: dict[str, dict[int, list[str]]] = {}
    files: dict[str, Sequence[str] | None] = {}
    out: list[SearchResult] = []
    #: The citation of each chunk that became a result, as the result shows it.
    shown_as: dict[str, str] = {}
    for cand in ranked:
        if len(out) >= k:
            break
        chunk = cand.chunk
        taken = shown.setdefault(chunk.path, {})
        context, chunk_lines = split_context(chunk.text, chunk.start_line, chunk.end_line)
        own = "\n".join(chunk_lines)
        aligned = len(chunk_lines) == chunk.end_line - chunk.start_line + 1
        if not aligned:
            chunk_lines = [own]  # not line-aligned (should not happen): one block
        first = chunk.start_line
        free = [
            not any(part in seen for seen in taken.get(first + i, ()))
            for i, part in enumerate(chunk_lines)
        ]
        focus = None if cand.focus_line is None or not aligned else cand.focus_line - first
        run = _run_around(free, focus) or _longest_run(free)
        if run is None:
            continue  # every line of it is already shown
        whole = run
        if focus is not None and run[0] <= focus <= run[1]:
            run = _centred(chunk_lines, run, focus, budget)
        start, end = first + run[0], first + run[1]
        if not aligned:
            start, end = chunk.start_line, chunk.end_line
        text = "\n".join(chunk_lines[run[0] : run[1] + 1])
        if len(text) > budget:
            snippet = make_snippet(text, weights, budget)
        elif tight is not None and tight(chunk.path):
            if aligned and estimate_tokens(own) <= PACK_TOKENS:
                run = whole = _matching_blocks(chunk_lines, run, weights)
                start, end = first + run[0], first + run[1]
                text = "\n".join(chunk_lines[run[0] : run[1] + 1])
            snippet = text
        else:
            if lines_of is not None and chunk.path not in files:
                files[chunk.path] = lines_of(chunk.path)
            start, end, text = _widen(
                files.get(chunk.path), chunk, own, start, end, text, taken, budget
            )
            snippet = text
        for offset, line_text in enumerate(text.split("\n")):
            taken.setdefault(start + offset, []).append(line_text)
        # The rest of a centred run counts as shown too: a later, overlapping chunk would
        # otherwise spend a result on the same passage (measured: a point of LoCoMo seen@6).
        for i in range(whole[0], whole[1] + 1):
            if aligned and chunk_lines[i] not in taken.get(first + i, ()):
                taken.setdefault(first + i, []).append(chunk_lines[i])
        result = _to_result(cand, start, end, snippet)
        if not (tight is not None and tight(chunk.path)):
            _cite_answer(result, weights, slot)
        result.context = " › ".join(heading_title(line) for line in context)
        out.append(result)
        shown_as[f"{chunk.path}#L{chunk.start_line}-L{chunk.end_line}"] = result.citation
    for result in out:  # an echo cites its source as shown (a packed chunk is narrowed)
        source = result.explain.get("echo_of")
        if source in shown_as:
            result.explain["echo_of"] = shown_as[source]
    return out


def _matching_blocks(
    lines: Sequence[str], run: tuple[int, int], weights: Mapping[str, float]
) -> tuple[int, int]:
    """The part of ``run`` (indices into a packed chunk's own ``lines``) a result shows: from
    the first to the last of its blocks whose query terms weigh at least half as much as the
    best block's (``weights``: term → rarity among the candidates, as for snippets). The whole
    run when it holds one block or no block holds a query term (a hit by meaning alone)."""
    spans = [
        (max(first, run[0]), min(last, run[1]))
        for first, last in block_spans(lines)
        if first <= run[1] and last >= run[0]
    ]
    if len(spans) < 2:
        return run
    held = [
        sum(
            weights.get(t, 0.0)
            for t in dict.fromkeys(found_tokens("\n".join(lines[a : b + 1]), weights))
        )
        for a, b in spans
    ]
    best = max(held)
    if best <= 0.0:
        return run
    kept = [span for span, weight in zip(spans, held, strict=True) if weight >= best / 2]
    return kept[0][0], kept[-1][1]


def _run_around(flags: Sequence[bool], index: int | None) -> tuple[int, int] | None:
    """The run of True in ``flags`` that contains ``index`` (None if there is none)."""
    if index is None or not 0 <= index < len(flags) or not flags[index]:
        return None
    lo, hi = index, index
    while lo > 0 and flags[lo - 1]:
        lo -= 1
    while hi + 1 < len(flags) and flags[hi + 1]:
        hi += 1
    return lo, hi


def _centred(
    lines: Sequence[str], run: tuple[int, int], focus: int, budget: int
) -> tuple[int, int]:
    """The lines of ``run`` around ``focus`` that fit ``budget`` characters: the focus line,
    then one line below and one above in turn while they fit (the whole run if it fits)."""
    if len("\n".join(lines[run[0] : run[1] + 1])) <= budget:
        return run
    lo = hi = focus
    size = len(lines[focus])
    grew = True
    while grew:
        grew = False
        for i in (hi + 1, lo - 1):
            if not run[0] <= i <= run[1] or lo <= i <= hi:
                continue
            if size + len(lines[i]) + 1 > budget:
                continue
            size += len(lines[i]) + 1
            lo, hi = min(lo, i), max(hi, i)
            grew = True
    return lo, hi


def _longest_run(flags: Sequence[bool]) -> tuple[int, int] | None:
    """``(first, last)`` indices of the longest run of True in ``flags`` (the first of equals)."""
    best: tuple[int, int] | None = None
    run_start: int | None = None
    for i, flag in enumerate([*flags, False]):
        if flag and run_start is None:
            run_start = i
        elif not flag and run_start is not None:
            if best is None or i - 1 - run_start > best[1] - best[0]:
                best = (run_start, i - 1)
            run_start = None
    return best


def _widen(
    lines: Sequence[str] | None,
    chunk: ChunkRow,
    own: str,
    start: int,
    end: int,
    text: str,
    taken: Mapping[int, list[str]],
    budget: int,
) -> tuple[int, int, str]:
    """Add neighbouring lines of the file below and above ``start..end`` within ``budget``;
    a piece of a long line gets the text around it in that line instead. ``own``: the chunk's
    own lines (its text without context headings)."""
    if lines is None or chunk.copy or chunk.end_line > len(lines):
        return start, end, text  # another host's copy: this host's file is not what it holds
    if "\n".join(lines[chunk.start_line - 1 : chunk.end_line]) != own:
        whole = lines[chunk.start_line - 1]
        if start == end == chunk.start_line and text == own and text in whole:
            return start, end, _around(whole, whole.index(text), len(text), budget, taken, start)
        return start, end, text  # the file changed since it was indexed: show what was found
    size = len(text)
    grew = True
    while grew:
        grew = False
        for line in (end + 1, start - 1):
            if not 1 <= line <= len(lines) or line in taken:
                continue
            extra = len(lines[line - 1]) + 1
            if size + extra > budget:
                continue
            size += extra
            if line > end:
                end = line
            else:
                start = line
            grew = True
    return start, end, "\n".join(lines[start - 1 : end])


def _around(
    line: str, pos: int, size: int, budget: int, taken: Mapping[int, list[str]], number: int
) -> str:
    """The text of ``line`` around ``line[pos:pos+size]``, at most ``budget`` chars, spread evenly
    on both sides, not reaching into text of this line already shown, and starting after a
    sentence end when one is near."""
    lo_limit, hi_limit = 0, len(line)
    for seen in taken.get(number, ()):
        at = line.find(seen)
        if at < 0 or not seen:
            continue
        if at < pos:  # shown text on the left: do not grow into it
            lo_limit = max(lo_limit, min(at + len(seen), pos))
        if at + len(seen) > pos + size:  # on the right
            hi_limit = min(hi_limit, max(at, pos + size))
    spare = max(0, budget - size)
    lo = max(lo_limit, pos - spare // 2)
    hi = min(hi_limit, pos + size + (spare - (pos - lo)))
    lo = max(lo_limit, min(pos, hi - budget)) if hi - lo < budget else lo
    if lo > lo_limit:
        ends = [m.end() for m in SENTENCE_ENDS.finditer(line, lo, pos)]
        lo = ends[0] if ends else lo
    return line[lo:hi]


def _cite_answer(result: SearchResult, weights: Mapping[str, float], slot: Slot | None) -> None:
    """Narrow ``result``'s citation to the lines of its window that answer (its snippet is
    kept whole: the window is their context)."""
    lines = result.snippet.split("\n")
    if len(lines) < 2 or len(lines) != result.end_line - result.start_line + 1:
        return
    found = answer_lines(lines, weights, slot)
    if found is None or found == (0, len(lines) - 1):
        return
    first, last = result.start_line + found[0], result.start_line + found[1]
    result.citation = f"{result.path}#L{first}-L{last}"
    result.explain["window"] = f"L{result.start_line}-L{result.end_line}"


def _to_result(cand: Candidate, start: int, end: int, snippet: str) -> SearchResult:
    chunk = cand.chunk
    return SearchResult(
        path=chunk.path,
        start_line=start,
        end_line=end,
        score=cand.score,
        snippet=snippet,
        source=chunk.source,
        citation=f"{chunk.path}#L{start}-L{end}",
        copy=chunk.copy,
        explain={
            "fused": round(cand.fused, 6),
            "coverage": round(cand.coverage, 6),
            "vector": round(cand.vector, 6),
            "vector_estimated": not cand.has_vector,
            "text": round(cand.text, 6),
            "decay": round(cand.decay, 6),
            "age_days": cand.age_days,
            "mmr_rank": cand.mmr_rank,
            "rerank": None,  # set by the rerank stage (memdir.search.rerank_stage)
            "focus_line": cand.focus_line,
            "query": cand.query,
            "parts": dict(cand.parts),
            "echo_of": cand.echo_of,
        },
    )


__all__ = ["make_snippet", "place_results"]
