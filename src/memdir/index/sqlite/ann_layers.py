"""The approximate index of :mod:`memdir.index.sqlite.ann` as it is searched and changed: a faiss
``IndexIVFPQ`` either held in memory or read from a map of the base file
(:mod:`memdir.index.sqlite.ann_file`), with the changes since then beside it.

faiss reads an IVF index's inverted lists as views of the mapped file (``IO_FLAG_MMAP_IFC``,
~5 ms at 1.8 million vectors where a copy took ~0.5 s), but such a list cannot be changed: faiss
aborts the process on an add or a removal. So a mapped index is never changed. What a delta or
an edit brings is kept beside it: the vectors added, in a small in-memory index that shares its
quantiser and codebooks, and the seqs removed, left out of its search by an id selector. A
search asks both and keeps the best; only writing a new base copies the map into memory
(:meth:`LayeredIndex.owned`), once. The map must outlive every index read from it: the
quantiser's centroids are views of it too.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def map_index(faiss: Any, data: np.ndarray) -> Any:
    """The index serialised in ``data`` (a map of the file), its inverted lists left in it."""
    reader = faiss.ZeroCopyIOReader(faiss.swig_ptr(data), data.size)
    return faiss.read_index(reader, faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY)


def read_layered(faiss: Any, data: np.ndarray) -> LayeredIndex:
    """The index serialised in ``data``: mapped, or copied by a faiss that cannot read one
    without copying it (no ``ZeroCopyIOReader``: the ``ann`` extra allows faiss 1.8)."""
    if hasattr(faiss, "ZeroCopyIOReader") and hasattr(faiss, "IO_FLAG_MMAP_IFC"):
        return LayeredIndex(faiss, map_index(faiss, data), data)
    return LayeredIndex(faiss, faiss.deserialize_index(np.array(data)))


class LayeredIndex:
    """An IVF index, held (``mapped`` None) or mapped from ``mapped``, and what changed since."""

    def __init__(self, faiss: Any, index: Any, mapped: np.ndarray | None = None) -> None:
        self.faiss = faiss
        self.base = index
        #: The serialised index the base's lists are views of (kept alive with them).
        self.mapped = mapped
        #: The vectors added since the map (and their seqs), and the seqs removed from it.
        self.added: Any | None = None
        self.added_seqs: set[int] = set()
        self.removed: set[int] = set()
        self._selector: Any | None = None

    @property
    def d(self) -> int:
        return int(self.base.d)

    @property
    def ntotal(self) -> int:
        if self.mapped is None:
            return int(self.base.ntotal)
        added = self.added.ntotal if self.added is not None else 0
        return int(self.base.ntotal) - len(self.removed) + int(added)

    def search(self, query: np.ndarray, n: int, nprobe: int) -> list[int]:
        """The ``n`` nearest seqs to ``query`` (one row) by the codes, best first."""
        params = self.faiss.SearchParametersIVF()
        params.nprobe = nprobe
        if self.mapped is not None and self.removed:
            if self._selector is None:
                batch = self.faiss.IDSelectorBatch(np.fromiter(self.removed, dtype=np.int64))
                self._selector = (batch, self.faiss.IDSelectorNot(batch))
            params.sel = self._selector[1]
        scores, found = self.base.search(query, n, params=params)
        if self.added is not None and self.added.ntotal:
            extra = self.faiss.SearchParametersIVF()
            extra.nprobe = nprobe
            more_scores, more = self.added.search(query, n, params=extra)
            scores = np.concatenate([scores[0], more_scores[0]])[None, :]
            found = np.concatenate([found[0], more[0]])[None, :]
            order = np.argsort(-scores[0], kind="stable")[:n]
            found = found[:, order]
        return [int(s) for s in found[0] if s >= 0]

    def remove(self, seqs: np.ndarray) -> None:
        """Remove these seqs (each of them in the index)."""
        seqs = np.ascontiguousarray(seqs, dtype=np.int64)
        if self.mapped is None:
            self.base.remove_ids(seqs)
            return
        wanted = {int(s) for s in seqs}
        added = wanted & self.added_seqs
        if added and self.added is not None:
            self.added.remove_ids(np.fromiter(added, dtype=np.int64, count=len(added)))
            self.added_seqs -= added
        self.removed |= wanted - added
        self._selector = None

    def add(self, vectors: np.ndarray, seqs: np.ndarray) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        seqs = np.ascontiguousarray(seqs, dtype=np.int64)
        if self.mapped is None:
            self.base.add_with_ids(vectors, seqs)
            return
        if self.added is None:
            self.added = map_index(self.faiss, self.mapped)  # the same quantiser and codebooks
            self._replace_lists(self.added)
            self.added.ntotal = 0
        self.added.add_with_ids(vectors, seqs)
        self.added_seqs.update(int(s) for s in seqs)

    def owned(self) -> Any:
        """The whole index in memory, with the changes applied (copies a mapped one, once)."""
        if self.mapped is not None:
            # Not only the lists are views of the map (the quantiser's centroids are too): a
            # whole copy leaves nothing pointing into it.
            self.base = self.faiss.deserialize_index(self.mapped)
            if self.removed:
                self.base.remove_ids(np.fromiter(self.removed, dtype=np.int64))
            if self.added is not None and self.added.ntotal:
                self.base.merge_from(self.added, 0)
            self.mapped, self.added, self._selector = None, None, None
            self.added_seqs, self.removed = set(), set()
        return self.base

    def _replace_lists(self, index: Any) -> None:
        """Give ``index`` empty inverted lists in memory."""
        lists = self.faiss.ArrayInvertedLists(index.nlist, index.code_size)
        index.replace_invlists(lists, True)
        lists.this.disown()  # the index owns it now
