"""The files of the approximate vector index (:mod:`memdir.index.sqlite.ann`): a *base* and a
*delta* beside ``index.sqlite``.

- ``index.ann``, the base: the faiss index serialised, the ``(seq, vector id)`` pairs it holds,
  the header that ties it to one SQLite file and the state (generation, counts) it was written
  at. ~100 bytes a vector: 220 MB at 1.8 million, so it is not written after every edit.
- ``index.ann.delta``: the ``(seq, vector id)`` changes since the base was written (0: a chunk
  deleted), and the state they bring it to; a few kilobytes, written after every sync of the
  server's file watcher, so a new process finds the index of the current generation from the
  two files without comparing every chunk's link in SQLite (2.3 s at 1.8 million chunks). A
  delta applies only to the base whose state it names.

Both are uncompressed ``.npz`` files (zip archives): their CRC-32 checks catch a damaged file,
which the caller then rebuilds. Each is written to a temporary file and renamed over the old
one, so a reader sees the old file or the new one.
"""

from __future__ import annotations

import contextlib
import json
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: The base file's name beside ``index.sqlite``; the delta adds ``.delta``.
SIDECAR = "index.ann"
#: What reading a damaged or foreign file may raise.
READ_ERRORS = (OSError, ValueError, KeyError, RuntimeError, zipfile.BadZipFile)


@dataclass
class Base:
    """A base file's contents (``index``: the serialised faiss index as uint8)."""

    header: dict[str, Any]
    state: dict[str, Any]
    index: np.ndarray
    seqs: np.ndarray
    ids: np.ndarray


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


def _unjson(value: np.ndarray) -> dict[str, Any]:
    loaded = json.loads(bytes(value).decode("utf-8"))
    if not isinstance(loaded, dict):
        raise ValueError("not a JSON object")
    return loaded


def _write(path: Path, **arrays: np.ndarray) -> None:
    """Write ``arrays`` to ``path`` atomically (raises OSError; no temporary file is left)."""
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:  # a file object: np.savez adds no ".npz" to it
            np.savez(fh, **arrays)  # type: ignore[arg-type]  # (numpy types allow_pickle too)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_base(path: Path, base: Base) -> None:
    """Write the base and remove a delta of an older base."""
    _write(
        path,
        header=_json(base.header),
        state=_json(base.state),
        index=base.index,
        seqs=base.seqs,
        ids=base.ids,
    )
    with contextlib.suppress(OSError):
        delta_path(path).unlink()


def read_base(path: Path) -> Base:
    """Raises: one of :data:`READ_ERRORS` for a missing, damaged or malformed file."""
    with np.load(path, allow_pickle=False) as data:
        base = Base(
            _unjson(data["header"]),
            _unjson(data["state"]),
            data["index"],
            data["seqs"].astype(np.int64),
            data["ids"].astype(np.int64),
        )
    if len(base.seqs) != len(base.ids):
        raise ValueError("its seqs and vector ids differ in number")
    return base


def write_delta(path: Path, delta: Delta) -> None:
    _write(
        delta_path(path),
        header=_json(delta.header),
        base_state=_json(delta.base_state),
        state=_json(delta.state),
        changes=np.asarray(delta.changes, dtype=np.int64).reshape(-1, 2),
    )


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
