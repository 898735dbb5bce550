"""Approximate vector search for big SQLite indexes (docs/design.md#vector-search).

Exact search keeps every vector of the index in one float32 matrix: at 10,000 generated files
(1.8 million chunks) that is 2.8 GB to decode at the first search of a process (13–20 s) and a
~210–250 ms scan at every search. Above :data:`ANN_OVER` chunks with a vector, and when faiss
is installed (the ``ann`` extra), :class:`AnnVectorSearch` asks an inverted-file index of
product-quantised codes (faiss ``IndexIVFPQ``) for a shortlist of :data:`SHORTLIST` chunks and
rescores them exactly from the vectors stored in SQLite. Below the threshold, without faiss, or
when the index cannot be had, the search is the exact one
(:class:`~memdir.index.sqlite.vectors.NumpyVectorSearch`).

Why this index and not a graph (usearch, hnswlib): the file must stay small beside an index
that already holds the vectors once. Product-quantised codes of ``dims / 4`` bytes (96 for 384
dimensions) with their ids make ~120 bytes a vector (220 MB at 1.8 million); usearch's HNSW
file with int8 vectors was ~530 bytes a vector, and on the generated corpus (a few hundred real
vectors with small noise, so many near-duplicates) its recall@24 stayed below 0.7
(docs/benchmarks.md#big-vaults-round-2-issue-30).

The files (:mod:`memdir.index.sqlite.ann_file`: a base and a delta beside ``index.sqlite``)
are a cache like the rest of the index, never the truth:

- they record the SQLite file's identity and inode, the ``(seq, vector id)`` pairs they hold
  and the state (generation, counts) they were written at; a process takes them as they are
  only at that very state, and otherwise compares every chunk's link in SQLite with theirs and
  applies the difference, so files that are behind are brought in step, never trusted;
- a damaged file, or one of another index (a rebuild swapped the SQLite file), is rebuilt from
  the stored vectors. The base is read memory-mapped (:mod:`memdir.index.sqlite.ann_layers`):
  a read checks its size, meta and the head of its faiss index; the whole file's CRC-32 is
  checked by :meth:`AnnVectorSearch.warm` (the server's watcher) and before a new base is
  written, since damage in its codes can cost recall but never an exact score;
- within a process, the writes' own record of what they changed
  (:class:`~memdir.index.sqlite.meta.LinkChanges`) is applied instead of comparing every link;
- every hit is rescored from SQLite, so a chunk deleted meanwhile is never returned and every
  score is exact.
"""

from __future__ import annotations

import functools
import importlib
import os
from pathlib import Path
from typing import Any

import numpy as np

from memdir.embeddings.base import Vectors
from memdir.extras import install_hint
from memdir.index.sqlite.ann_file import (
    READ_ERRORS,
    SIDECAR,
    Base,
    Delta,
    read_base,
    read_delta,
    write_base,
    write_delta,
)
from memdir.index.sqlite.ann_layers import LayeredIndex, read_layered
from memdir.index.sqlite.embeddings import SCAN_OVER
from memdir.index.sqlite.store import SqliteStore
from memdir.index.sqlite.vectors import NumpyVectorSearch

#: Chunks with a vector from which the approximate index is used by default (``[index]
#: approximate_over``; ``MEMDIR_ANN_OVER`` overrides both, for benchmarks; 0 uses it always).
ANN_OVER = 50_000
#: Fewer vectors than this are always searched exactly, whatever the threshold: each codebook
#: has 256 centroids to train (and a shortlist would hold most of the index anyway).
MIN_VECTORS = 256
#: Chunks the approximate index proposes for exact rescoring (recall@24 against exact 0.99 at
#: 482,000 generated chunks; 500 gave 0.977).
SHORTLIST = 1000
#: Inverted lists scanned per query.
NPROBE = 32
#: Vectors the coarse quantiser and the codebooks are trained on, per inverted list (at least
#: :data:`TRAIN_MIN`): training is most of a build (k-means over the sample, on one core
#: ~30 s for 30,000 vectors and 617 lists, ~5 s for 10,000 with half the iterations).
TRAIN_PER_LIST = 20
TRAIN_MIN = 10_000
#: k-means iterations of the coarse quantiser and of each codebook.
TRAIN_ITERATIONS = 8
#: Rows the file may lack before it is written again.
REWRITE_AFTER = 2000
#: ... or this share of the index, if more: a one-line edit of a long log re-chunks its file,
#: and every chunk of it gets a new seq (470 links changed at a time in the generated corpus),
#: so a fixed 2,000 rewrote the 220 MB base every few edits at 1.8 million vectors.
REWRITE_SHARE = 0.01
#: Bumped when the file's layout or the index's parameters change (an old file is rebuilt).
FORMAT = 2


def ann_over(configured: int = ANN_OVER) -> int:
    """The threshold in force: ``MEMDIR_ANN_OVER`` when set, else ``configured``."""
    value = os.environ.get("MEMDIR_ANN_OVER", "")
    return int(value) if value.strip().isdigit() else configured


@functools.cache
def load_faiss() -> Any | None:
    """The faiss module, or None when the ``ann`` extra is not installed (looked for once a
    process: a failed import is not cached by Python, and every search would pay for it;
    importing faiss costs ~0.3 s, paid only by an index over the threshold)."""
    try:
        return importlib.import_module("faiss")
    except ImportError:
        return None


class AnnVectorSearch:
    """Exact search below the threshold, shortlist + exact rescoring above it (see the module
    docstring). ``notes`` receives what ``memdir status`` should say (faiss missing, a
    sidecar rebuilt)."""

    name = "numpy"

    def __init__(self, path: Path, notes: list[str] | None = None, *, over: int = ANN_OVER) -> None:
        self.file = path.with_name(SIDECAR)
        self.over = over
        self.notes = notes if notes is not None else []
        self.exact = NumpyVectorSearch()
        self._index: LayeredIndex | None = None
        #: The base file read and mapped, until its whole checksum is verified (:meth:`warm`).
        self._unverified: Base | None = None
        self._seqs: np.ndarray = np.zeros(0, dtype=np.int64)
        self._ids: np.ndarray = np.zeros(0, dtype=np.int64)
        self._header: dict[str, Any] = {}
        self._key: tuple[str, int] | None = None
        #: The state of the base file (None: not written yet), the changes since it, and
        #: whether the files hold all of them.
        self._base_state: dict[str, Any] | None = None
        self._pending: list[tuple[int, int]] = []
        self._written = False
        self._warned = False
        #: What the last search used: "exact" or "ann" (for tests and benchmarks).
        self.last = "exact"

    # -- the SqliteVectorSearch protocol ------------------------------------------------

    def search(self, store: SqliteStore, query: Vectors, k: int) -> list[tuple[int, float]]:
        if k <= 0 or not self._use_ann(store) or not self._in_step(store):
            self.last = "exact"
            return self.exact.search(store, query, k)
        self.last = "ann"
        query = np.asarray(query, dtype=np.float32).reshape(1, -1)
        if self._index is None or query.shape[1] != self._index.d:
            return []
        shortlist = self._index.search(query, max(SHORTLIST, k), NPROBE)
        stored = store.vectors_by_seq(shortlist)  # exact, and only chunks that still exist
        if not stored:
            return []
        seqs = np.fromiter(stored, dtype=np.int64, count=len(stored))
        scores = np.stack([stored[int(s)] for s in seqs]) @ query[0]
        order = np.lexsort((seqs, -scores))[:k]
        return [(int(seqs[i]), float(scores[i])) for i in order]

    def warm(self, store: SqliteStore) -> None:
        """Bring the index in step and write what the file lacks: the MCP server's file
        watcher calls this after each of its syncs, so a new process finds a file of the
        current generation and compares no links (a search never writes a small change)."""
        if self._use_ann(store):
            if self._in_step(store) and self._verified(store) and not self._written:
                self._save(store)
        else:
            self.exact.warm(store)

    def close(self) -> None:
        self.exact.close()
        self._key = None

    def _verified(self, store: SqliteStore) -> bool:
        """Check the whole checksum of the base file the index was mapped from, once (a search
        checks only its head: damage in the codes can cost recall, never a wrong score). A
        damaged file is removed and the index rebuilt: False when it cannot be had."""
        base, self._unverified = self._unverified, None
        if base is None:
            return True
        try:
            base.verify()
            return True
        except READ_ERRORS as exc:
            self.notes.append(f"{self.file.name} could not be read ({exc}): rebuilt")
        self._index, self._key, self._header = None, None, {}
        try:
            self.file.unlink()
        except OSError:
            return False  # not removed: it would be mapped again; exact search meanwhile
        return self._in_step(store)

    # -- keeping the index ----------------------------------------------------------------

    def _use_ann(self, store: SqliteStore) -> bool:
        vectors = store.counter("vectors")
        if vectors < max(ann_over(self.over), MIN_VECTORS) or store.bound_model() is None:
            return False
        if load_faiss() is None:
            if not self._warned:
                self._warned = True
                self.notes.append(
                    f"{vectors} vectors are searched exactly; an approximate "
                    f"index would be faster: {install_hint('ann')}"
                )
            return False
        return True

    def _in_step(self, store: SqliteStore) -> bool:
        """Bring the index in step with ``store`` (load, update or build it); False when it
        cannot be used (the exact search answers then)."""
        key = (str(store.path), store.generation())
        if key == self._key and self._index is not None:
            return True
        changes = self._changes_since(store)
        if changes is not None:
            self._apply_changes(store, changes)
            self._key = key
            return True
        header = self._expected_header(store)
        loaded: dict[str, Any] = {}
        if self._index is None or self._header != header:
            self._index, self._unverified = None, None
            loaded = self._load(store, header)
        if self._index is None or loaded != self._state(store, key[1]):
            seqs, ids = store.vector_links()  # the files are missing or behind: compare all
            if self._index is None:
                self._build(store, header, seqs, ids)
            else:
                self._apply(store, seqs, ids)
        self._key = key
        due = self._index is not None and (self._base_state is None or self._rewrite_due())
        if due and self._verified(store):  # a new base is never written from a damaged one
            self._save(store)
        if self._index is not None:
            self.exact = NumpyVectorSearch()  # its matrix is not needed while the index answers
        return self._index is not None

    @staticmethod
    def _state(store: SqliteStore, generation: int) -> dict[str, Any]:
        """What says that a file is in step with ``store`` without comparing every link: the
        generation it was written at (bumped by every write of the chunks or vectors) and the
        counts of chunks and vectors then."""
        return {
            "generation": generation,
            "chunks": store.counter("chunks"),
            "vectors": store.counter("vectors"),
        }

    def _changes_since(self, store: SqliteStore) -> list[tuple[int, int]] | None:
        """The vector changes since the index was last in step, when this process made them
        all through ``store`` (its :attr:`~memdir.index.sqlite.meta.SqliteMeta.link_log` runs
        without a gap from that generation to the current one); None otherwise, and the
        caller compares every link."""
        if self._index is None or self._key is None or self._key[0] != str(store.path):
            return None
        at = self._key[1]
        changes: list[tuple[int, int]] = []
        for entry in list(store.link_log):
            if entry.after <= at:
                continue
            if entry.before != at:
                return None  # another connection wrote in between
            changes.extend(entry.links)
            at = entry.after
        return changes if at == store.generation() else None

    def _apply_changes(self, store: SqliteStore, changes: list[tuple[int, int]]) -> None:
        """Apply ``(seq, vector id)`` changes in order (0: deleted) to the index and its
        sorted ``(seq, id)`` arrays: what an edit synced by the file watcher costs."""
        assert self._index is not None
        final = dict(changes)
        if not final:
            return
        seqs = np.fromiter(final, dtype=np.int64, count=len(final))
        ids = np.fromiter(final.values(), dtype=np.int64, count=len(final))
        pos = np.minimum(np.searchsorted(self._seqs, seqs), max(len(self._seqs) - 1, 0))
        present = (self._seqs[pos] == seqs) if len(self._seqs) else np.zeros(len(seqs), bool)
        same = present & (self._ids[pos] == ids)
        dropped = present & ~same
        if dropped.any():
            self._index.remove(seqs[dropped])
            keep = np.ones(len(self._seqs), dtype=bool)
            keep[pos[dropped]] = False
            self._seqs, self._ids = self._seqs[keep], self._ids[keep]
        added = ~same & (ids != 0)
        if added.any():
            order = np.argsort(seqs[added])
            new_seqs, new_ids = seqs[added][order], ids[added][order]
            vectors = np.ascontiguousarray(_vectors(store, new_ids), dtype=np.float32)
            self._index.add(vectors, new_seqs)
            at = np.searchsorted(self._seqs, new_seqs)
            self._seqs = np.insert(self._seqs, at, new_seqs)
            self._ids = np.insert(self._ids, at, new_ids)
        self._pending.extend((int(s), 0) for s in seqs[dropped & ~added])
        self._pending.extend((int(s), int(i)) for s, i in zip(seqs[added], ids[added], strict=True))
        self._written = self._written and not (dropped.any() or added.any())

    def _expected_header(self, store: SqliteStore) -> dict[str, Any]:
        model = store.bound_model()
        try:
            inode = os.stat(store.path).st_ino
        except OSError:
            inode = 0
        return {
            "format": FORMAT,
            "identity": store.meta_get("identity") or "",
            "inode": inode,
            "dims": model.dims if model else 0,
        }

    def _load(self, store: SqliteStore, header: dict[str, Any]) -> dict[str, Any]:
        """Read the base file and its delta when they are there, whole and of this index
        (otherwise note why); returns the state they were written at (see :meth:`_state`),
        empty when nothing was read."""
        faiss = load_faiss()
        if faiss is None or not self.file.exists():
            return {}
        try:
            base = read_base(self.file)
            if base.header != header:
                self.notes.append(f"{self.file.name} belongs to another index: rebuilt")
                return {}
            index = read_layered(faiss, base.index)
            if index.base.ntotal != len(base.seqs) or index.d != header["dims"]:
                raise ValueError("its rows do not match its index")
        except READ_ERRORS as exc:
            self.notes.append(f"{self.file.name} could not be read ({exc}): rebuilt")
            return {}
        self._index, self._header = index, header
        self._seqs, self._ids, self._unverified = base.seqs, base.ids, base
        self._base_state, self._pending, self._written = base.state, [], True
        try:
            delta = read_delta(self.file)
        except READ_ERRORS:
            delta = None  # the links are compared instead
        if delta is None or delta.header != header or delta.base_state != base.state:
            return base.state
        self._apply_changes(store, [(int(s), int(i)) for s, i in delta.changes.tolist()])
        self._written = True
        return delta.state

    def _build(
        self, store: SqliteStore, header: dict[str, Any], seqs: np.ndarray, ids: np.ndarray
    ) -> None:
        """Train and fill a new index from the stored vectors, and write it."""
        faiss = load_faiss()
        if faiss is None or not len(seqs):
            return
        vectors = np.ascontiguousarray(store.vectors_by_id(ids), dtype=np.float32)
        dims = vectors.shape[1]
        lists = int(min(1024, max(1, round(len(seqs) ** 0.5))))
        subspaces = _subspaces(dims)
        quantiser = faiss.IndexFlatIP(dims)
        index = faiss.IndexIVFPQ(quantiser, dims, lists, subspaces, 8, faiss.METRIC_INNER_PRODUCT)
        for clustering in (index.cp, index.pq.cp):
            clustering.niter = TRAIN_ITERATIONS
            # The sample is smaller than faiss asks for on purpose (training time): without
            # this it prints a warning on stderr, in the middle of a CLI search's output.
            clustering.min_points_per_centroid = 1
        sample = min(len(vectors), max(TRAIN_MIN, TRAIN_PER_LIST * lists))
        rng = np.random.default_rng(0)  # a fixed sample: the same index from the same vectors
        train = vectors[np.sort(rng.choice(len(vectors), sample, replace=False))]
        index.train(train)
        index.add_with_ids(vectors, seqs)
        self._index, self._seqs, self._ids, self._header = (
            LayeredIndex(faiss, index),
            seqs,
            ids,
            header,
        )
        self._base_state, self._pending, self._written = None, [], False

    def _apply(self, store: SqliteStore, seqs: np.ndarray, ids: np.ndarray) -> None:
        """Bring the index to these links (both arrays sorted by seq; a row is kept when the
        same seq points at the same vector): the changes go through :meth:`_apply_changes`."""
        pos = np.minimum(np.searchsorted(self._seqs, seqs), max(len(self._seqs) - 1, 0))
        if len(self._seqs):
            kept = (self._seqs[pos] == seqs) & (self._ids[pos] == ids)
        else:
            kept = np.zeros(len(seqs), dtype=bool)
        stays = np.zeros(len(self._seqs), dtype=bool)
        stays[pos[kept]] = True
        changes = [(int(s), 0) for s in self._seqs[~stays]]
        changes += [(int(s), int(i)) for s, i in zip(seqs[~kept], ids[~kept], strict=True)]
        self._apply_changes(store, changes)

    def _rewrite_due(self) -> bool:
        """Whether the changes since the base are many enough to write it again."""
        return len(self._pending) >= max(REWRITE_AFTER, REWRITE_SHARE * len(self._seqs))

    def _save(self, store: SqliteStore) -> None:
        """Write what the files lack: the whole base after a build or once the changes since
        it reach :data:`REWRITE_AFTER`, else only the delta. A failure to write leaves the
        search in memory working and the files to be brought in step by the next process."""
        faiss = load_faiss()
        if faiss is None or self._index is None or self._key is None:
            return
        state = self._state(store, self._key[1])
        try:
            if self._base_state is None or self._rewrite_due():
                owned = self._index.owned()  # a mapped index is copied into memory, once
                index = faiss.serialize_index(owned)
                base = Base(self._header, state, index, self._seqs, self._ids)
                write_base(self.file, base, int(owned.code_size))
                self._unverified = None  # what the index holds is in memory now
                self._base_state, self._pending = state, []
            else:
                changes = np.asarray(self._pending, dtype=np.int64).reshape(-1, 2)
                write_delta(self.file, Delta(self._header, self._base_state, state, changes))
            self._written = True
        except OSError as exc:
            self.notes.append(f"{self.file.name} could not be written ({exc})")


def _vectors(store: SqliteStore, ids: np.ndarray) -> Vectors:
    """The stored vectors of ``ids``, looked up in batches below the size at which
    :meth:`~memdir.index.sqlite.embeddings.SqliteEmbeddings.vectors_by_id` reads the whole table
    (a delta of ~18,000 changes costs ~0.15 s this way, a whole read 2 s at 1.8 million)."""
    step = SCAN_OVER
    parts = [store.vectors_by_id(ids[i : i + step]) for i in range(0, len(ids), step)]
    return np.vstack(parts) if len(parts) > 1 else parts[0]


def _subspaces(dims: int) -> int:
    """Product-quantiser subspaces: ``dims / 4`` (one byte for four dimensions) when that
    divides ``dims``, else the largest divisor of ``dims`` not above it."""
    want = max(1, dims // 4)
    return next(m for m in range(want, 0, -1) if dims % m == 0)
