"""The files of the approximate vector index (:mod:`memdir.index.sqlite.ann`): a *base* and a
*delta* beside ``index.sqlite``.

- ``index.ann``, the base: the faiss index serialised, the ``(seq, vector id)`` pairs it holds,
  the header that ties it to one SQLite file and the state (generation, counts) it was written
  at. ~120 bytes a vector: 220 MB at 1.8 million, so it is not written after every edit.
- ``index.ann.delta``: the ``(seq, vector id)`` changes since the base was written (0: a chunk
  deleted), and the state they bring it to; a few kilobytes, written after every sync of the
  server's file watcher, so a new process finds the index of the current generation from the
  two files without comparing every chunk's link in SQLite (2.3 s at 1.8 million chunks). A
  delta applies only to the base whose state it names.

The base is read memory-mapped, not copied: reading 220 MB out of a zip and deserialising it
was ~0.5 s of the first search of a new process, a map costs milliseconds. Its layout, all
little-endian::

    magic (16 bytes) | meta length (8) | meta CRC-32 (4) | meta (JSON) | padding to 64
    faiss index (``index_bytes``) | padding to 64 | seqs (int64 × rows) | ids (int64 × rows)

The meta holds the header, the state, the sizes and two CRC-32s: ``head_crc`` of the faiss
index up to its inverted lists (the quantiser, the codebooks and the lists' sizes: what tells
faiss where to read, ~2 MB, checked at every read, so a damaged file never has faiss read out
of bounds), and ``crc`` of everything after the meta, checked by :meth:`Base.verify` (60–160 ms
at 220 MB, not at the first search: the server's watcher calls it). What the first check lets
through is damage in the codes or ids of the lists or in the seqs and ids arrays, which can
only cost recall: every hit is rescored from SQLite, and only chunks that exist are returned.
A file of the wrong size, magic or meta is refused.

The delta is an uncompressed ``.npz`` file (its zip CRC-32 checks catch damage). Each file is
written to a temporary file and renamed over the old one, so a reader sees the old file or the
new one (and a map of the old one stays valid).
"""

from __future__ import annotations

import contextlib
import json
import os
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

#: The base file's name beside ``index.sqlite``; the delta adds ``.delta``.
SIDECAR = "index.ann"
#: What reading a damaged or foreign file may raise.
READ_ERRORS = (OSError, ValueError, KeyError, RuntimeError, TypeError, zipfile.BadZipFile)
#: The base file's first bytes (its last byte: the layout's version).
MAGIC = b"memdir-ann-base\x02"
#: Where the faiss index and the arrays start: a multiple of this.
ALIGN = 64
#: The bytes of a vector in the index's inverted lists beyond its code: its id.
ID_BYTES = 8


@dataclass
class Base:
    """A base file's contents. Read, ``index`` (the serialised faiss index as uint8), ``seqs``
    and ``ids`` are read-only views of a map of the file."""

    header: dict[str, Any]
    state: dict[str, Any]
    index: np.ndarray
    seqs: np.ndarray
    ids: np.ndarray
    #: The file's map and the CRC-32 of its contents after the meta (set when read).
    body: np.ndarray | None = None
    crc: int = 0

    def verify(self) -> None:
        """Check the CRC-32 of the whole file (raises ValueError)."""
        if self.body is not None and zlib.crc32(self.body.data) != self.crc:
            raise ValueError("its checksum does not match")


@dataclass
class Delta:
    """A delta file's contents: ``changes`` is an ``(n, 2)`` array of ``(seq, vector id)``."""

    header: dict[str, Any]
    base_state: dict[str, Any]
    state: dict[str, Any]
    changes: np.ndarray


def delta_path(base: Path) -> Path:
    return base.with_name(base.name + ".delta")


def _json(value: dict[str, Any]) -> np.ndarray:
    return np.frombuffer(json.dumps(value, sort_keys=True).encode("utf-8"), dtype=np.uint8)


def _unjson(value: np.ndarray | bytes) -> dict[str, Any]:
    loaded = json.loads(bytes(value).decode("utf-8"))
    if not isinstance(loaded, dict):
        raise ValueError("not a JSON object")
    return loaded


def _aligned(offset: int) -> int:
    return -(-offset // ALIGN) * ALIGN


def head_bytes(index_bytes: int, rows: int, code_size: int) -> int:
    """The bytes of a serialised IVF index before its inverted lists' contents (faiss writes
    the lists last: each vector's code and id), which tell faiss where to read."""
    return max(0, index_bytes - rows * (code_size + ID_BYTES))


def _write(path: Path, fill: Any) -> None:
    """Write ``path`` atomically with ``fill(file object)`` (raises OSError; no temporary file
    is left)."""
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            fill(fh)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_base(path: Path, base: Base, code_size: int) -> None:
    """Write the base (``code_size``: the bytes of a vector's code in the index) and remove a
    delta of an older base."""
    index = np.ascontiguousarray(base.index, dtype=np.uint8)
    seqs = np.ascontiguousarray(base.seqs, dtype="<i8")
    ids = np.ascontiguousarray(base.ids, dtype="<i8")
    if len(seqs) != len(ids):
        raise ValueError("its seqs and vector ids differ in number")
    pad = np.zeros(_aligned(len(index)) - len(index), dtype=np.uint8)
    crc = 0
    for part in (index, pad, seqs, ids):
        crc = zlib.crc32(part.data, crc)
    head = head_bytes(len(index), len(seqs), code_size)
    meta = json.dumps(
        {
            "header": base.header,
            "state": base.state,
            "index_bytes": len(index),
            "rows": len(seqs),
            "code_size": code_size,
            "head_crc": zlib.crc32(index[:head].data),
            "crc": crc,
        },
        sort_keys=True,
    ).encode("utf-8")
    start = len(MAGIC) + 12 + len(meta)

    def fill(fh: BinaryIO) -> None:
        fh.write(MAGIC + len(meta).to_bytes(8, "little") + zlib.crc32(meta).to_bytes(4, "little"))
        fh.write(meta + bytes(_aligned(start) - start))
        for part in (index, pad, seqs, ids):
            fh.write(part.data)

    _write(path, fill)
    with contextlib.suppress(OSError):
        delta_path(path).unlink()


def read_base(path: Path) -> Base:
    """Map the base: checks its size, magic, meta and the head of its faiss index, not the
    rest (:meth:`Base.verify` does).

    Raises: one of :data:`READ_ERRORS` for a missing, damaged or malformed file."""
    with open(path, "rb") as fh:
        first = fh.read(len(MAGIC) + 12)
        if len(first) < len(MAGIC) + 12 or first[: len(MAGIC)] != MAGIC:
            raise ValueError("it is not a base file of this version")
        size = int.from_bytes(first[len(MAGIC) : len(MAGIC) + 8], "little")
        if size > 1 << 20:
            raise ValueError("its meta is too long")
        meta_bytes = fh.read(size)
        if zlib.crc32(meta_bytes) != int.from_bytes(first[len(MAGIC) + 8 :], "little"):
            raise ValueError("its meta's checksum does not match")
        total = os.fstat(fh.fileno()).st_size
    meta = _unjson(meta_bytes)
    index_bytes, rows, code_size = (int(meta[k]) for k in ("index_bytes", "rows", "code_size"))
    start = _aligned(len(MAGIC) + 12 + size)
    arrays = start + _aligned(index_bytes)
    if min(index_bytes, rows, code_size) < 0 or total != arrays + 2 * ID_BYTES * rows:
        raise ValueError("its size does not match its meta")
    body = np.memmap(path, dtype=np.uint8, mode="r", offset=start, shape=(total - start,))
    index = body[:index_bytes]
    if zlib.crc32(index[: head_bytes(index_bytes, rows, code_size)].data) != meta["head_crc"]:
        raise ValueError("its index's checksum does not match")
    header, state = meta["header"], meta["state"]
    if not isinstance(header, dict) or not isinstance(state, dict):
        raise ValueError("its meta is malformed")
    pairs = body[arrays - start :].view("<i8")
    return Base(header, state, index, pairs[:rows], pairs[rows:], body, int(meta["crc"]))


def write_delta(path: Path, delta: Delta) -> None:
    def fill(fh: BinaryIO) -> None:
        np.savez(
            fh,  # a file object: np.savez adds no ".npz" to it
            header=_json(delta.header),
            base_state=_json(delta.base_state),
            state=_json(delta.state),
            changes=np.asarray(delta.changes, dtype=np.int64).reshape(-1, 2),
        )

    _write(delta_path(path), fill)


def read_delta(path: Path) -> Delta | None:
    """The delta of the base at ``path``, None when there is none.

    Raises: one of :data:`READ_ERRORS` for a damaged or malformed file."""
    where = delta_path(path)
    if not where.exists():
        return None
    with np.load(where, allow_pickle=False) as data:
        return Delta(
            _unjson(data["header"]),
            _unjson(data["base_state"]),
            _unjson(data["state"]),
            data["changes"].astype(np.int64).reshape(-1, 2),
        )
