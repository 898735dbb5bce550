"""The two legs of a search, started side by side, and each candidate scored on both
(docs/design.md#search, steps 1–3).

A hybrid search needs the query's embedding before its vector leg, and the keyword leg needs
none. :class:`QueryEmbeddings` embeds the queries on a worker thread while the calling thread
runs :func:`keyword_leg` for each of them (:meth:`memdir.Memory.search` starts it even before
the index catches up with the files): the search pays for the longer of the two, not for their
sum. Both mostly wait outside Python's lock (the embedding model in its native engine or
on the network, SQLite in its own code), so on a machine with two cores they really overlap
(measured: docs/benchmarks.md#big-vaults-issue-17). Only the embedding runs on the worker: the
index's SQLite connection stays on the calling thread.

Then every candidate gets the leg that did not find it (:func:`complete_legs`); a candidate
whose chunk has no vector yet is embedded on the spot when the budget allows
(:func:`embed_candidates`), else its vector leg is estimated (:func:`estimate_missing_vectors`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memdir.bridge import Bridge
from memdir.embeddings.base import Embedder, Vectors
from memdir.errors import ProviderError
from memdir.index.base import KeywordQuery
from memdir.index.manager import IndexManager
from memdir.search.types import Candidate, EmbedMissing
from memdir.text import plain_terms, query_terms

KEYWORD_QUERIES = {"or": query_terms, "and": plain_terms}
"""``search.keyword_query`` → how a query becomes keyword terms; the name is also the
:class:`~memdir.index.base.KeywordQuery` mode (``or``: any term, ``and``: every term)."""


#: A translation's BM25 part, and its share of term coverage, weigh this much times its
#: weight in the bridge (docs/design.md#search, "Across languages").
TRANSLATION_WEIGHT = 0.6


@dataclass(frozen=True)
class KeywordLeg:
    """One query's keyword leg: the query's text, its terms, the keyword query they make (None:
    only stopwords) and the hits as ``(seq, score in [0, 1))``, best first; ``forms`` holds
    each term's forms (the term, weight 1, and its translations: :mod:`memdir.bridge`)."""

    text: str
    terms: list[str]
    query: KeywordQuery | None
    hits: list[tuple[int, float]]
    forms: list[dict[str, float]] = field(default_factory=list)

    @property
    def weights(self) -> dict[str, float]:
        """Every form of every term → its weight (a term 1)."""
        out: dict[str, float] = {}
        for forms in self.forms or [{t: 1.0} for t in self.terms]:
            for form, weight in forms.items():
                out[form] = max(out.get(form, 0.0), weight)
        return out


def keyword_leg(
    manager: IndexManager, text: str, mode: str, k: int, bridge: Bridge | None = None
) -> KeywordLeg:
    """The ``k`` best keyword matches of ``text`` (``mode``: a :data:`KEYWORD_QUERIES` key);
    with a ``bridge``, each term also in the other language (``or`` mode only)."""
    terms = KEYWORD_QUERIES[mode](text)
    forms = [{t: 1.0} for t in terms]
    if bridge is not None and mode == "or":
        forms = [
            {c.term: 1.0, **{f: TRANSLATION_WEIGHT * w for f, w in c.translations.items()}}
            for c in bridge.concepts(terms)
        ]
    weights = {f: w for group in forms for f, w in group.items() if w != 1.0}
    groups = {f: i for i, group in enumerate(forms) for f in group}
    query = KeywordQuery.build(list(groups), mode, weights or None, groups if weights else None)
    hits = manager.keyword_search(query, k) if query is not None else []
    return KeywordLeg(text, terms, query, hits, forms)


class QueryEmbeddings:
    """The vectors of ``parts``, computed on a worker thread from the moment this is made;
    :meth:`wait` gives them. Without an embedder (keyword-only mode) nothing starts.

    A thread per search, not a shared pool: a remote provider stuck past a caller's time limit
    holds only its own search's thread, never the next search's embedding.
    """

    def __init__(
        self, embedder: Embedder | None, parts: Sequence[str], companion: Any = None
    ) -> None:
        self._vectors: dict[str, Any] = {}
        #: Each query's companion vector (``search/across.py``), when there is a companion.
        self.companion: dict[str, Any] = {}
        self._warnings: list[str] = []
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if embedder is None or not any(p.strip() for p in parts):
            return
        self._thread = threading.Thread(
            target=self._run,
            args=(embedder, list(parts), companion),
            name="memdir-query",
            daemon=True,
        )
        self._thread.start()

    def _run(self, embedder: Embedder, parts: list[str], companion: Any) -> None:
        try:
            self._vectors = embed_queries(embedder, parts, self._warnings)
        except BaseException as exc:  # raised again in the caller's thread by wait()
            self._error = exc
            return
        if companion is None or not self._vectors:
            return
        try:
            self.companion = {p: companion.query(p) for p in self._vectors}
        except Exception as exc:  # an aid: without it, the other language ranks less well
            self._warnings.append(f"companion model failed: {exc}")

    def wait(self, warnings: list[str]) -> dict[str, Any]:
        """Each query's vector (a query whose embedding failed is left out, its warning added
        to ``warnings``).

        Raises:
            Exception: whatever the embedder raised other than a provider failure.
        """
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error
        warnings.extend(self._warnings)
        return self._vectors


def embed_queries(
    embedder: Embedder | None, parts: Sequence[str], warnings: list[str]
) -> dict[str, Any]:
    """Each query's vector (a query whose embedding failed is left out, with a warning)."""
    out: dict[str, Any] = {}
    if embedder is None:
        return out
    for part in parts:
        if not part.strip():
            continue
        try:
            out[part] = embedder.embed_query(part)
        except ProviderError as exc:
            warnings.append(f"query embedding failed, keyword search only: {exc}")
    return out


def complete_legs(
    manager: IndexManager,
    pool: Sequence[Candidate],
    query_vector: Any,
    keywords: KeywordQuery | None,
) -> None:
    """Give each candidate the leg that did not return it: the cosine similarity of a keyword
    hit outside the vector top-k, the BM25 of a vector hit the keyword leg missed. Without
    this a chunk found by one leg scores 0 on the other and sinks below weaker chunks that
    both legs returned."""
    no_vector = [c.chunk.seq for c in pool if not c.has_vector]
    if no_vector:
        sims = manager.vector_scores(query_vector, no_vector)
        for cand in pool:
            if cand.chunk.seq in sims:
                cand.vector = max(0.0, sims[cand.chunk.seq])
                cand.has_vector = True
    no_text = [c.chunk.seq for c in pool if not c.keyword_hit]
    if no_text and keywords is not None:
        scores = manager.keyword_scores(keywords, no_text)
        for cand in pool:
            if scores.get(cand.chunk.seq, 0.0) > 0:
                cand.text = scores[cand.chunk.seq]
                cand.keyword_hit = True


def embed_candidates(
    pool: Sequence[Candidate], query_vector: Vectors, embed_missing: EmbedMissing
) -> int:
    """Give the candidates without a vector their real one where ``embed_missing`` can, the
    strongest keyword matches first; returns how many it embedded."""
    missing = sorted((c for c in pool if not c.has_vector), key=lambda c: -c.text)
    if not missing:
        return 0
    fresh = embed_missing([c.chunk.seq for c in missing])
    q = np.asarray(query_vector, dtype=np.float32)
    for cand in missing:
        vector = fresh.get(cand.chunk.seq)
        if vector is not None:
            cand.vector = max(0.0, float(np.asarray(vector, dtype=np.float32) @ q))
            cand.has_vector = True
    return sum(1 for c in missing if c.has_vector)


def estimate_missing_vectors(pool: Sequence[Candidate]) -> int:
    """Estimate the vector leg of candidates that have no vector, so that a keyword match
    competes on equal terms instead of scoring 0 on that leg (OpenClaw's "missing side = 0"
    sank every chunk not embedded yet below every embedded one).

    The estimate places a chunk within this query's own range of similarities by its keyword
    strength: ``low + (high − low) · text / best_text``, where ``high`` and ``low`` are the best
    and the median similarity among candidates that have a vector. Returns how many it
    estimated.
    """
    missing = [c for c in pool if not c.has_vector]
    if not missing:
        return 0
    known = sorted(c.vector for c in pool if c.has_vector)
    high = known[-1] if known else 0.0
    low = known[len(known) // 2] if known else 0.0
    best_text = max((c.text for c in pool), default=0.0) or 1.0
    for cand in missing:
        cand.vector = low + (high - low) * (cand.text / best_text)
    return len(missing)


__all__ = [
    "KEYWORD_QUERIES",
    "TRANSLATION_WEIGHT",
    "KeywordLeg",
    "QueryEmbeddings",
    "complete_legs",
    "embed_candidates",
    "embed_queries",
    "estimate_missing_vectors",
    "keyword_leg",
]
