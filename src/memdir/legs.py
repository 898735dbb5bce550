"""The two legs of a search, started side by side (docs/design.md#search).

A hybrid search needs the query's embedding before its vector leg, and the keyword leg needs
none. :class:`QueryEmbeddings` embeds the queries on a worker thread while the calling thread
runs :func:`keyword_leg` for each of them (:meth:`memdir.Memory.search` starts it even before
the index catches up with the files): the search pays for the longer of the two, not for their
sum. Both mostly wait outside Python's lock (the embedding model in its native engine or
on the network, SQLite in its own code), so on a machine with two cores they really overlap
(measured: docs/benchmarks.md#big-vaults-issue-17). Only the embedding runs on the worker: the
index's SQLite connection stays on the calling thread.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memdir.embeddings.base import Embedder
from memdir.index.base import KeywordQuery
from memdir.subqueries import embed_queries, split_query
from memdir.text import plain_terms, query_terms

if TYPE_CHECKING:
    from memdir.index.manager import IndexManager

KEYWORD_QUERIES = {"or": query_terms, "and": plain_terms}
"""``search.keyword_query`` → how a query becomes keyword terms; the name is also the
:class:`~memdir.index.base.KeywordQuery` mode (``or``: any term, ``and``: every term)."""


def query_parts(query: str, more_queries: Sequence[str], split: str) -> tuple[list[str], bool]:
    """The queries a search runs, and whether they were split automatically: the caller's
    (``query`` first), else ``query`` and, with ``split`` = ``auto``, the parts
    :func:`~memdir.subqueries.split_query` finds in it."""
    extra = [q for q in more_queries if q.strip() and q != query]
    auto = not extra and split == "auto"
    return ([query, *extra] if extra else [query, *(split_query(query) if auto else [])]), auto


@dataclass(frozen=True)
class KeywordLeg:
    """One query's keyword leg: the query's text, its terms, the keyword query they make (None:
    only stopwords) and the hits as ``(seq, score in [0, 1))``, best first."""

    text: str
    terms: list[str]
    query: KeywordQuery | None
    hits: list[tuple[int, float]]


def keyword_leg(manager: IndexManager, text: str, mode: str, k: int) -> KeywordLeg:
    """The ``k`` best keyword matches of ``text`` (``mode``: a :data:`KEYWORD_QUERIES` key)."""
    terms = KEYWORD_QUERIES[mode](text)
    query = KeywordQuery.build(terms, mode)
    hits = manager.keyword_search(query, k) if query is not None else []
    return KeywordLeg(text, terms, query, hits)


class QueryEmbeddings:
    """The vectors of ``parts``, computed on a worker thread from the moment this is made;
    :meth:`wait` gives them. Without an embedder (keyword-only mode) nothing starts.

    A thread per search, not a shared pool: a remote provider stuck past a caller's time limit
    holds only its own search's thread, never the next search's embedding.
    """

    def __init__(self, embedder: Embedder | None, parts: Sequence[str]) -> None:
        self._vectors: dict[str, Any] = {}
        self._warnings: list[str] = []
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if embedder is None or not any(p.strip() for p in parts):
            return
        self._thread = threading.Thread(
            target=self._run, args=(embedder, list(parts)), name="memdir-query", daemon=True
        )
        self._thread.start()

    def _run(self, embedder: Embedder, parts: list[str]) -> None:
        try:
            self._vectors = embed_queries(embedder, parts, self._warnings)
        except BaseException as exc:  # raised again in the caller's thread by wait()
            self._error = exc

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


__all__ = ["KEYWORD_QUERIES", "KeywordLeg", "QueryEmbeddings", "keyword_leg", "query_parts"]
