"""One search, decided once: :class:`SearchPlan` (docs/design.md#search).

:meth:`memdir.Memory.search` splits the query into its parts (:func:`query_parts`), starts
their embeddings (:class:`~memdir.search.legs.QueryEmbeddings`) before the index catches up with
the files, and then builds the plan: the parts, the started embeddings, the settings, what the
scope hides, the calibration and the reranker, and what the facade lends the search (a file's
current lines, the embedding of candidates that lack a vector). Every stage of
:func:`memdir.search.pipeline.run_search` reads what it needs from that one immutable value,
instead of a long list of parameters handed down from stage to stage.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from memdir.bridge import Bridge
from memdir.config.settings import SearchConfig
from memdir.rerank.base import Reranker
from memdir.search.across import Across
from memdir.search.legs import QueryEmbeddings
from memdir.search.relevance import Calibration
from memdir.search.subqueries import split_query
from memdir.search.types import EmbedMissing, LinesOf

#: Candidates fetched beyond the usual number when the scope hides some files (shared scope).
HIDDEN_PATHS_MARGIN = 50


def query_parts(query: str, more_queries: Sequence[str], split: str) -> tuple[list[str], bool]:
    """The queries a search runs, and whether they were split automatically: the caller's
    (``query`` first), else ``query`` and, with ``split`` = ``auto``, the parts
    :func:`~memdir.search.subqueries.split_query` finds in it."""
    extra = [q for q in more_queries if q.strip() and q != query]
    auto = not extra and split == "auto"
    return ([query, *extra] if extra else [query, *(split_query(query) if auto else [])]), auto


@dataclass(frozen=True)
class SearchPlan:
    """What one search runs, and with what (the facade builds it, the pipeline reads it).

    Attributes:
        parts: the queries searched: the caller's first, then its further queries or the
            parts :func:`query_parts` found (each with reserved result slots).
        split: the parts after the first were found by the engine (``search.split_queries``),
            not given by the caller: each keeps ``search.subquery_slots`` places.
        embeddings: the parts' embeddings, already under way on a worker thread.
        config: the ``[search]`` settings.
        now: the time the search runs at (temporal decay).
        max_results: the caller's limit (None: ``search.max_results``).
        min_score: the caller's threshold (None: ``search.min_score`` for calibrated scores,
            ``search.raw_min_score`` for fused ones).
        exclude: workspace paths the scope hides (MEMORY.md and USER.md in a shared session).
        calibration: what turns a result's parts into its relevance (None: the fused score).
        reranker: reorders the best ``rerank_top_n`` placed passages (None: no rerank stage).
        rerank_top_n: how many passages the reranker sees.
        lines_of: a file's current lines, to widen results (None: shown as found).
        embed_missing: embeds candidates that have no vector yet (None: estimated).
        tight: whether a file's results are shown without neighbouring lines (structured
            notes).
        bridge: translates the query's words for the keyword leg (None: ``search.bridge``
            is off).
        across: what ranks notes of the other language by meaning (None: nothing does).
        variants: the same question as the first part, written otherwise by the caller (a
            translation, a paraphrase): searched with it as one question
            (:mod:`memdir.search.variants`).
    """

    parts: tuple[str, ...]
    split: bool
    embeddings: QueryEmbeddings
    config: SearchConfig
    now: datetime
    max_results: int | None = None
    min_score: float | None = None
    exclude: frozenset[str] = frozenset()
    calibration: Calibration | None = None
    reranker: Reranker | None = None
    rerank_top_n: int = 24
    lines_of: LinesOf | None = None
    embed_missing: EmbedMissing | None = None
    tight: Callable[[str], bool] | None = None
    bridge: Bridge | None = None
    across: Across | None = None
    variants: tuple[str, ...] = ()

    @property
    def query(self) -> str:
        """The caller's query (the first part)."""
        return self.parts[0]

    @property
    def k(self) -> int:
        """How many results the search returns at most."""
        return max(1, self.max_results or self.config.max_results)

    @property
    def candidates(self) -> int:
        """How many candidates each query ranks (``max_candidates`` at most)."""
        return min(self.config.max_candidates, self.k * self.config.candidate_multiplier)

    @property
    def fetch(self) -> int:
        """How many hits each leg fetches: the candidates, and a margin for hidden paths."""
        return self.candidates + (HIDDEN_PATHS_MARGIN if self.exclude else 0)


__all__ = ["HIDDEN_PATHS_MARGIN", "SearchPlan", "query_parts"]
