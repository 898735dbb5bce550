"""The offline default reranker: a logistic model over the features search computes.

Its weights are a small JSON file inside the package (``learned.json``), written by
``benchmarks/train_reranker.py`` (LoCoMo dev split only, never the test split; reproducible from
its seed). Scoring a candidate is one dot product: no model runs at search time, so it costs
microseconds. The score is the model's probability that the candidate holds what the question
asks for.

File format::

    {"format": 1, "features": [...], "mean": [...], "scale": [...], "coef": [...],
     "intercept": 0.0, "trained": {...how it was made...}}

Each feature is standardised (``(x - mean) / scale``) before the dot product.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from memdir.errors import ConfigError
from memdir.rerank.base import FEATURES, RerankDoc

#: The shipped weights, next to this module.
WEIGHTS_FILE = "learned.json"
FORMAT = 1


@dataclass(frozen=True)
class LogisticModel:
    """Standardised features → ``sigmoid(coef · x + intercept)``."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    trained: Mapping[str, Any]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str) -> LogisticModel:
        """Read a weights file's content.

        Raises:
            ConfigError: the format is unknown, a list has the wrong length, or a feature is
                one search does not compute.
        """
        try:
            if data.get("format") != FORMAT:
                raise ValueError(f"format {data.get('format')!r}, expected {FORMAT}")
            features = tuple(str(f) for f in data["features"])
            mean, scale, coef = (
                tuple(float(x) for x in data[k]) for k in ("mean", "scale", "coef")
            )
            intercept = float(data["intercept"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{where}: not a memdir reranker weights file ({exc})") from exc
        unknown = [f for f in features if f not in FEATURES]
        if unknown or any(len(v) != len(features) for v in (mean, scale, coef)):
            raise ConfigError(
                f"{where}: weights do not fit this memdir (unknown features {unknown}, "
                f"or lists of different lengths); retrain with benchmarks/train_reranker.py"
            )
        if any(s <= 0 or not math.isfinite(s) for s in scale):
            raise ConfigError(f"{where}: every scale must be a positive number")
        return cls(features, mean, scale, coef, intercept, dict(data.get("trained", {})))

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "features": list(self.features),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "coef": list(self.coef),
            "intercept": self.intercept,
            "trained": dict(self.trained),
        }

    def score(self, features: Mapping[str, float]) -> float:
        z = self.intercept
        for name, mu, sd, w in zip(self.features, self.mean, self.scale, self.coef, strict=True):
            z += w * (features.get(name, mu) - mu) / sd
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


def load_model(path: Path | None = None) -> LogisticModel:
    """The weights at ``path``, or the shipped ones.

    Raises:
        ConfigError: the file cannot be read or does not fit (see :meth:`LogisticModel.from_dict`).
    """
    where = str(path) if path is not None else f"memdir/rerank/{WEIGHTS_FILE}"
    try:
        if path is None:
            text = resources.files("memdir.rerank").joinpath(WEIGHTS_FILE).read_text("utf-8")
        else:
            text = path.read_text(encoding="utf-8")
        data = json.loads(text)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{where}: cannot read reranker weights ({exc})") from exc
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: not a memdir reranker weights file")
    return LogisticModel.from_dict(data, where=where)


class LearnedReranker:
    """Scores candidates with a :class:`LogisticModel` (the shipped one by default)."""

    name = "learned"
    remote = False

    def __init__(self, model: LogisticModel | None = None) -> None:
        self.model = model if model is not None else load_model()

    def rerank(self, query: str, docs: Sequence[RerankDoc]) -> list[float]:
        return [self.model.score(doc.features) for doc in docs]


__all__ = ["FORMAT", "WEIGHTS_FILE", "LearnedReranker", "LogisticModel", "load_model"]
