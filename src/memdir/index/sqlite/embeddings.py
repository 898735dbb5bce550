"""Vectors of :class:`~memdir.index.sqlite.store.SqliteStore`, each stored once
(docs/design.md#vector-search).

``embeddings`` holds one row per (embedding model, text hash): it is the embedding cache and the
index's vectors at once — a chunk points at its row (``chunks.vector``), so a vector is never
stored twice, and a text embedded once is never embedded again. Rows are compact
(:mod:`memdir.index.sqlite.codec`: float16, then centred int8 once the model has a centre).
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter

import numpy as np

from memdir.embeddings.base import Vectors
from memdir.index.base import EmbeddingSpace
from memdir.index.sqlite.codec import decode, encode
from memdir.index.sqlite.meta import SqliteMeta
from memdir.index.sqlite.schema import CENTRE_AFTER, hash_key, hash_text

#: Above this many vectors asked for, :meth:`SqliteEmbeddings.vectors_by_id` reads the model's
#: whole table once instead of looking the ids up in batches.
SCAN_OVER = 5000


class _Model:
    """An ``embedding_models`` row."""

    def __init__(self, id: int, dims: int, centre: bytes | None) -> None:
        self.id = id
        self.dims = dims
        self.centre = None if centre is None else np.frombuffer(centre, dtype=np.float32)


class SqliteEmbeddings(SqliteMeta):
    """The vector methods of :class:`~memdir.index.sqlite.store.SqliteStore` (a mixin)."""

    #: The model of this index's vectors (None: keyword-only).
    space: EmbeddingSpace | None

    # -- models -------------------------------------------------------------------------

    def _models_of(self, provider: str, model: str, provider_key: str) -> list[_Model]:
        rows = self.conn.execute(
            "SELECT id, dims, centre FROM embedding_models WHERE provider = ? AND model = ? "
            "AND provider_key = ?",
            (provider, model, provider_key),
        )
        return [_Model(int(r[0]), int(r[1]), r[2]) for r in rows]

    def _model(self, provider: str, model: str, provider_key: str, dims: int) -> _Model:
        """The model row, created when missing (inside the write transaction)."""
        for found in self._models_of(provider, model, provider_key):
            if found.dims == dims:
                return found
        cur = self.conn.execute(
            "INSERT INTO embedding_models(provider, model, provider_key, dims) VALUES (?, ?, ?, ?)",
            (provider, model, provider_key, dims),
        )
        return _Model(int(cur.lastrowid or 0), dims, None)

    def bound_model(self) -> _Model | None:
        """The row of :attr:`space` (None before its first vector, or keyword-only)."""
        if self.space is None:
            return None
        for found in self._models_of(
            self.space.provider, self.space.model, self.space.provider_key
        ):
            if found.dims == self.space.dims:
                return found
        return None

    # -- the cache ----------------------------------------------------------------------

    def cache_get(
        self, provider: str, model: str, provider_key: str, hashes: Sequence[str]
    ) -> dict[str, Vectors]:
        out: dict[str, Vectors] = {}
        wanted = list(dict.fromkeys(hashes))
        for found in self._models_of(provider, model, provider_key):
            for start in range(0, len(wanted), 500):
                part = [hash_key(h) for h in wanted[start : start + 500]]
                marks = ",".join("?" * len(part))
                rows = self.conn.execute(
                    f"SELECT hash, vector FROM embeddings WHERE model = ? AND hash IN ({marks})",
                    [found.id, *part],
                ).fetchall()
                vectors = decode([r[1] for r in rows], found.dims, found.centre)
                for (key, _), vec in zip(rows, vectors, strict=True):
                    out.setdefault(hash_text(key), vec)
        return out

    def cache_put(
        self, provider: str, model: str, provider_key: str, items: Sequence[tuple[str, Vectors]]
    ) -> None:
        with self.write():
            self._put(provider, model, provider_key, items)

    def _put(
        self, provider: str, model: str, provider_key: str, items: Sequence[tuple[str, Vectors]]
    ) -> dict[str, int]:
        """Store the vectors of keys not stored yet (inside the write transaction); returns the
        row id of every key of ``items``."""
        latest = {key: np.asarray(vec, dtype=np.float32) for key, vec in items}
        ids: dict[str, int] = {}
        for dims in sorted({int(v.shape[-1]) for v in latest.values()}):
            keys = [k for k, v in latest.items() if int(v.shape[-1]) == dims]
            row = self._model(provider, model, provider_key, dims)
            if row.centre is None:
                self._maybe_set_centre(row, np.stack([latest[k] for k in keys]))
            blobs = encode(np.stack([latest[k] for k in keys]), row.centre)
            before = self.conn.total_changes
            self.conn.executemany(
                "INSERT OR IGNORE INTO embeddings(model, hash, vector) VALUES (?, ?, ?)",
                [(row.id, hash_key(k), b) for k, b in zip(keys, blobs, strict=True)],
            )
            self._add_counts({"embeddings": self.conn.total_changes - before})
            for start in range(0, len(keys), 500):
                part = [hash_key(k) for k in keys[start : start + 500]]
                marks = ",".join("?" * len(part))
                for rowid, key in self.conn.execute(
                    f"SELECT id, hash FROM embeddings WHERE model = ? AND hash IN ({marks})",
                    [row.id, *part],
                ):
                    ids[hash_text(key)] = int(rowid)
        self._bump_generation()  # the cache size is part of counts()
        return ids

    def _maybe_set_centre(self, row: _Model, fresh: Vectors) -> None:
        """Give the model its centre once it has :data:`CENTRE_AFTER` vectors: their mean. The
        float16 rows stay as they are."""
        stored = self.conn.execute(
            "SELECT vector FROM embeddings WHERE model = ?", (row.id,)
        ).fetchall()
        if len(stored) + len(fresh) < CENTRE_AFTER:
            return
        old = decode([r[0] for r in stored], row.dims, None)
        centre = np.vstack([old, fresh]).mean(axis=0).astype(np.float32)
        self.conn.execute(
            "UPDATE embedding_models SET centre = ? WHERE id = ?", (centre.tobytes(), row.id)
        )
        row.centre = centre

    # -- the chunks' vectors ------------------------------------------------------------

    def set_vectors(self, items: Sequence[tuple[int, str, Vectors]]) -> None:
        """Store the vectors of existing chunks (skipping chunks deleted meanwhile): each once,
        under its key, and the chunk pointing at it."""
        if self.space is None or not items:
            return
        space = self.space
        with self.write():
            ids = self._put(
                space.provider, space.model, space.provider_key, [(k, v) for _, k, v in items]
            )
            for seq, key, _ in items:
                done = self.conn.execute(
                    "UPDATE chunks SET vector = ? WHERE seq = ? AND vector IS NULL "
                    "RETURNING embeddable",
                    (ids[key], seq),
                ).fetchall()
                if done:
                    self._add_counts({"vectors": 1, "pending": -int(bool(done[0][0]))})
                    self._link(seq, ids[key])
            self._bump_generation()

    def all_vectors(self) -> tuple[np.ndarray, Vectors]:
        """All the chunks' vectors as ``(seqs, matrix)``; the matrix is empty when none."""
        row = self.bound_model()
        rows = self.conn.execute(
            "SELECT c.seq, e.vector FROM chunks c JOIN embeddings e ON e.id = c.vector "
            "ORDER BY c.seq"
        ).fetchall()
        if not rows or row is None:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        seqs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        return seqs, decode([r[1] for r in rows], row.dims, row.centre)

    def vector_links(self) -> tuple[np.ndarray, np.ndarray]:
        """``(seqs, embedding row ids)`` of the chunks that have a vector, by seq: what a cached
        matrix is checked against (a few bytes a chunk, no blob read)."""
        # One string built by SQLite from a covering index, parsed by numpy: ~3× faster than a
        # Python tuple per chunk (a quarter of a second at 480,000 chunks).
        (joined,) = self.conn.execute(
            "SELECT group_concat(seq || ' ' || vector, ' ') FROM chunks WHERE vector IS NOT NULL"
        ).fetchone()
        if not joined:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        pairs = np.fromstring(joined, dtype=np.int64, sep=" ").reshape(-1, 2)
        pairs = pairs[np.argsort(pairs[:, 0], kind="stable")]
        return pairs[:, 0].copy(), pairs[:, 1].copy()

    def vectors_by_id(self, ids: Sequence[int] | np.ndarray) -> Vectors:
        """The decoded vectors of these ``embeddings`` rows, in the order given (a zero row for
        one that is gone)."""
        row = self.bound_model()
        if row is None or not len(ids):
            return np.zeros((0, row.dims if row else 0), dtype=np.float32)
        wanted = [int(i) for i in ids]
        if len(wanted) > SCAN_OVER:
            # Most of them: one scan of the table in id order ("+model": not through the
            # (model, hash) index, whose hash order reads the table's pages at random).
            rows = self.conn.execute(
                "SELECT id, vector FROM embeddings WHERE +model = ? ORDER BY id", (row.id,)
            ).fetchall()
            return decode(_pick(rows, np.asarray(wanted, dtype=np.int64)), row.dims, row.centre)
        blobs: dict[int, bytes] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ",".join("?" * len(part))
            blobs.update(
                self.conn.execute(
                    f"SELECT id, vector FROM embeddings WHERE id IN ({marks})", part
                ).fetchall()
            )
        return decode([blobs.get(i, b"") for i in wanted], row.dims, row.centre)

    def vectors_by_seq(self, seqs: Sequence[int]) -> dict[int, Vectors]:
        row = self.bound_model()
        out: dict[int, Vectors] = {}
        if row is None:
            return out
        for start in range(0, len(seqs), 500):
            part = [int(s) for s in seqs[start : start + 500]]
            marks = ",".join("?" * len(part))
            rows = self.conn.execute(
                "SELECT c.seq, e.vector FROM chunks c JOIN embeddings e ON e.id = c.vector "
                f"WHERE c.seq IN ({marks})",
                part,
            ).fetchall()
            vectors = decode([r[1] for r in rows], row.dims, row.centre)
            out.update({int(r[0]): v for r, v in zip(rows, vectors, strict=True)})
        return out


def _pick(rows: list[tuple[int, bytes]], wanted: np.ndarray) -> list[bytes]:
    """The blobs of the ``wanted`` ids from ``(id, blob)`` rows sorted by id (an empty blob, so a
    zero vector, for an id that is not there): numpy lookups and C-level maps, no Python loop
    over 480,000 rows."""
    if not rows:
        return [b""] * len(wanted)
    ids = np.fromiter(map(itemgetter(0), rows), dtype=np.int64, count=len(rows))
    blobs = list(map(itemgetter(1), rows))
    pos = np.minimum(np.searchsorted(ids, wanted), len(ids) - 1)
    found = ids[pos] == wanted
    if not found.all():
        blobs.append(b"")  # a missing id reads the empty blob at the end
        pos[~found] = len(blobs) - 1
    return list(map(blobs.__getitem__, pos.tolist()))
