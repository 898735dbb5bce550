"""Vector search of :class:`~memdir.index.postgres.store.PostgresStore`: exact and HNSW
nearest-neighbour SQL over ``memdir_vectors``."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from memdir.embeddings.base import Vectors
from memdir.index.postgres.schema import (
    EXACT_SEARCH_MAX,
    HNSW_MAX_DIMS,
    WorkspaceRows,
    sql_literal,
    workspace_index_name,
)

#: ``hnsw.ef_search`` for a query asking for ``k`` neighbours: max(this, 2k), at most 1000.
#: Measured on 17,643 real USE vectors (docs/benchmarks-postgres.md): recall@10 0.93 at 64,
#: 0.95 at 100, 0.99 at 200, for 1.5 / 2.3 / 5.0 ms.
EF_SEARCH_MIN = 200


def _to_numpy(value: Any) -> Vectors:
    array = value.to_numpy() if hasattr(value, "to_numpy") else value
    return np.asarray(array, dtype=np.float32)


#: How long a store trusts what it found out about its HNSW index (a writer of another process
#: may build it meanwhile).
INDEX_CHECK_S = 30.0


class PostgresVectorSearch(WorkspaceRows):
    """The vector-search methods of :class:`~memdir.index.postgres.store.PostgresStore`
    (a mixin: it reads the store's ``conn`` and ``workspace_id``).

    Above :data:`EXACT_SEARCH_MAX` vectors a workspace is searched through its own HNSW index
    (a partial index on its rows, built by its writer:
    :func:`~memdir.index.postgres.schema.ensure_workspace_index`); the workspace's literal id in
    the query lets the planner choose it. An index over every workspace's rows (an index per
    dimension, as schema 1–4 made; benchmarks build one to compare) is used when it is the one
    there is; without either the search is exact.
    """

    _hnsw_checked: tuple[float, int, str | None] | None = None

    # -- vectors ------------------------------------------------------------------------

    def all_vectors(self) -> tuple[np.ndarray, Vectors]:
        rows = self.conn.execute(
            "SELECT seq, embedding FROM memdir_vectors WHERE workspace_id = %s ORDER BY seq",
            (self.workspace_id,),
        ).fetchall()
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        seqs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        return seqs, np.stack([_to_numpy(r[1]) for r in rows])

    def vectors_by_seq(self, seqs: Sequence[int]) -> dict[int, Vectors]:
        if not seqs:
            return {}
        rows = self.conn.execute(
            "SELECT seq, embedding FROM memdir_vectors WHERE workspace_id = %s AND seq = ANY(%s)",
            (self.workspace_id, [int(s) for s in seqs]),
        ).fetchall()
        return {int(r[0]): _to_numpy(r[1]) for r in rows}

    def nearest(
        self, query: Vectors, k: int, *, exact: bool | None = None, ef_search: int | None = None
    ) -> list[tuple[int, float]]:
        """``(seq, cosine similarity)`` of the ``k`` nearest vectors, best first.

        Args:
            exact: force exact search (True) or the HNSW index (False); by default the
                workspace's own HNSW index once it has one (its writer builds it past
                :data:`EXACT_SEARCH_MAX` vectors), the index over every workspace while the
                workspace holds more than that, else exact.
            ef_search: the HNSW candidate list size; default max(:data:`EF_SEARCH_MIN`, 2k).
        """
        dims = int(query.shape[-1])
        if k <= 0 or dims <= 0:
            return []
        vec = np.asarray(query, dtype=np.float32)
        index = None if exact or dims > HNSW_MAX_DIMS else self.hnsw_index(dims)
        if exact is None and index == f"memdir_vectors_hnsw_{dims}" and self._few_vectors(dims):
            # The index over every workspace serves a small workspace badly: exact is cheap.
            # A workspace's own index exists only once it grew large: no count needed then.
            index = None
        if index is not None:
            ef = ef_search or min(1000, max(EF_SEARCH_MIN, 2 * k))
            rows = self._hnsw(vec, dims, k, ef, own=index != f"memdir_vectors_hnsw_{dims}")
            if len(rows) >= k:
                return rows
        # ``embedding <=> q`` does not match the HNSW index's expression: an exact scan.
        found = self.conn.execute(
            "SELECT seq, 1 - (embedding <=> %s) FROM memdir_vectors "
            f"WHERE workspace_id = %s AND dims = {dims} ORDER BY embedding <=> %s, seq LIMIT %s",
            (vec, self.workspace_id, vec, k),
        ).fetchall()
        return [(int(r[0]), float(r[1])) for r in found]

    def hnsw_index(self, dims: int, *, fresh: bool = False) -> str | None:
        """The name of the valid HNSW index that serves this workspace's ``dims``-dimensional
        vectors: its own, else one over every workspace; None when there is neither. Looked
        up at most every :data:`INDEX_CHECK_S` seconds unless ``fresh``."""
        now = time.monotonic()
        checked = self._hnsw_checked
        if (
            not fresh
            and checked is not None
            and checked[1] == dims
            and now - checked[0] < (INDEX_CHECK_S)
        ):
            return checked[2]
        names = [workspace_index_name(self.workspace_id, dims), f"memdir_vectors_hnsw_{dims}"]
        valid = {
            str(r[0])
            for r in self.conn.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
                "WHERE c.relname = ANY(%s) AND i.indisvalid",
                (names,),
            ).fetchall()
        }
        found = next((n for n in names if n in valid), None)
        self._hnsw_checked = (now, dims, found)
        return found

    def _few_vectors(self, dims: int) -> bool:
        return self.vector_count(dims, EXACT_SEARCH_MAX + 1) <= EXACT_SEARCH_MAX

    def vector_count(self, dims: int, at_most: int) -> int:
        """How many ``dims``-dimensional vectors the workspace holds, counted up to
        ``at_most``."""
        row = self._one(
            "SELECT count(*) FROM (SELECT 1 FROM memdir_vectors WHERE workspace_id = %s "
            f"AND dims = {dims} LIMIT {int(at_most)}) AS s",
            (self.workspace_id,),
        )
        return int(row[0])

    def _hnsw(
        self, vec: Vectors, dims: int, k: int, ef: int, *, own: bool
    ) -> list[tuple[int, float]]:
        cast = f"vector({dims})"
        # The workspace's own index is partial (``WHERE workspace_id = '…'``): the planner
        # proves it applies only from the literal id, so the id is written into the query.
        where = sql_literal(self.workspace_id) if own else "%s"
        params: tuple[Any, ...] = (vec,) if own else (vec, self.workspace_id)
        with self.conn.transaction():
            # set_config(..., true) lasts for this transaction only (SET LOCAL).
            self.conn.execute(
                "SELECT set_config('hnsw.ef_search', %s, true), "
                "set_config('hnsw.iterative_scan', 'strict_order', true)",
                (str(ef),),
            )
            rows = self.conn.execute(
                f"SELECT seq, 1 - (embedding::{cast} <=> %s::{cast}) FROM memdir_vectors "
                f"WHERE workspace_id = {where} AND dims = {dims} "
                f"ORDER BY embedding::{cast} <=> %s::{cast} LIMIT %s",
                (*params, vec, k),
            ).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]
