"""The search pipeline's data, at the bottom of the package: what every stage passes on
(docs/design.md#search).

- :class:`Candidate`: a chunk on its way through the stages, with each score it gets;
- :class:`SearchResult`: one hit as an agent reads it (a placed passage and its citation);
- :class:`SearchResponse`: the results of one search and how they were found;
- :data:`LinesOf` and :data:`EmbedMissing`: what the facade lends a search (a file's current
  lines, the embedding of candidates that have no vector yet).

Every other module of :mod:`memdir.search` imports from here; this module imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memdir.embeddings.base import Vectors
from memdir.index.base import ChunkRow

#: ``lines_of(path)``: a file's lines as they are now, or None when it cannot be read.
LinesOf = Callable[[str], Sequence[str] | None]

#: ``embed_missing(seqs)``: embed (and store) what it can of these chunks that lack a vector,
#: in this order, within its own budget; returns their vectors.
EmbedMissing = Callable[[Sequence[int]], Mapping[int, Vectors]]


def placeholder_chunk(seq: int) -> ChunkRow:
    """A chunk known only by its ``seq`` (a leg's hit before its row is read)."""
    return ChunkRow(seq, "", "", "", 0, 0, "")


@dataclass
class Candidate:
    """A chunk on its way through the pipeline."""

    chunk: ChunkRow
    vector: float = 0.0
    text: float = 0.0
    score: float = 0.0
    decay: float = 1.0
    age_days: float | None = None
    keyword_hit: bool = False
    mmr_rank: int | None = None
    #: The vector leg is the chunk's real cosine similarity; False: the chunk has no vector
    #: (not embedded yet, or too large to embed) and ``vector`` is an estimate.
    has_vector: bool = False
    #: The fused score that ranked it (``score`` becomes its calibrated relevance when the
    #: embedding model has coefficients, see :mod:`memdir.search.relevance`).
    fused: float = 0.0
    #: The share of the query terms' IDF weight that the chunk holds.
    coverage: float = 0.0
    #: The best line of the chunk (1-based file line): the snippet is centred on it.
    focus_line: int | None = None
    #: The query (or sub-query) that found it.
    query: str = ""
    #: The parts its calibrated relevance was computed from (:mod:`memdir.search.relevance`).
    parts: dict[str, float] = field(default_factory=dict)
    #: The citation of the result it quotes (:mod:`memdir.search.echoes`), if it is an echo.
    echo_of: str | None = None
    #: Its file changed in the last ``relevance.FRESH_SECONDS`` (just written).
    fresh: bool = False
    #: The plain cosine of its vector leg, when :mod:`memdir.search.across` replaced ``vector``
    #: by its similarity across languages (None: ``vector`` is the cosine).
    cosine: float | None = None
    #: For a note of the other language than the query: its centred cosine and its companion
    #: model's cosine (None without a companion code), :func:`memdir.search.across.rescore`.
    across: tuple[float, float | None] | None = None


@dataclass
class SearchResult:
    """One hit: where it is, how well it matched, and what to read."""

    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    source: str
    citation: str
    explain: dict[str, Any] = field(default_factory=dict)
    #: The headings the snippet sits under (``Project facts › People``), for a hit in a
    #: structured note (docs/design.md, "Structured notes"); empty otherwise.
    context: str = ""
    #: Another host's copy that holds the hit, in an index shared by several hosts, when this
    #: host's file does not yet (``memory_get`` with it reads that copy); empty otherwise.
    copy: str = ""

    def to_dict(self, *, explain: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "score": round(self.score, 6),
            "snippet": self.snippet,
            "source": self.source,
            "citation": self.citation,
        }
        if self.context:
            data["context"] = self.context
        if self.copy:
            data["copy"] = self.copy
        if explain:
            data["explain"] = self.explain
        return data


@dataclass
class SearchResponse:
    """Results plus how they were found."""

    query: str
    results: list[SearchResult]
    mode: str  # "hybrid", "keyword" or "empty"
    legs: list[str]
    terms: list[str]
    warnings: list[str] = field(default_factory=list)
    index: dict[str, Any] = field(default_factory=dict)
    #: Candidates ranked with an estimated vector leg (their chunk had no vector yet).
    estimated: int = 0
    #: The share of the query's terms that occur in no chunk (part of a calibrated score).
    unknown: float = 0.0
    #: The scores are calibrated relevances (see :mod:`memdir.search.relevance`).
    calibrated: bool = False
    #: The threshold the results passed (None in keyword-only mode, which has none).
    min_score: float | None = None
    #: Every query searched: the query, then the caller's further queries or its own parts.
    queries: list[str] = field(default_factory=list)
    #: The query's variants searched with it as one question (a translation, a paraphrase).
    variants: list[str] = field(default_factory=list)
    #: What the off-topic gate looked at (:func:`memdir.search.relevance.cut_off_topic`): the
    #: best candidate's term coverage and cosine (``--explain`` shows them).
    evidence: dict[str, float] = field(default_factory=dict)

    def to_dict(self, *, explain: bool = False) -> dict[str, Any]:
        data = self._data(explain)
        if explain:
            data["evidence"] = self.evidence
        return data

    def _data(self, explain: bool) -> dict[str, Any]:
        return {
            "query": self.query,
            "queries": self.queries or [self.query],
            **({"variants": self.variants} if self.variants else {}),
            "mode": self.mode,
            "legs": self.legs,
            "terms": self.terms,
            "results": [r.to_dict(explain=explain) for r in self.results],
            "scores": "relevance" if self.calibrated else "fused",
            "min_score": self.min_score,
            "unknown_terms": round(self.unknown, 3),
            "warnings": self.warnings,
            "index": self.index,
        }


__all__ = [
    "Candidate",
    "EmbedMissing",
    "LinesOf",
    "SearchResponse",
    "SearchResult",
    "placeholder_chunk",
]
