"""Line-level scoring and the features a reranker is given.

A candidate chunk holds several lines (a dialogue turn, a bullet, a sentence run). The line
that answers a question is often one of them among others that do not, so the chunk's own
scores blur it. :func:`score_lines` scores each line of a candidate on its own:

- its cosine similarity to the query, from the line's embedding (``chunking.line_vectors``
  puts every line's embedding in the embedding cache; a line without one has no cosine);
- its query-term coverage: the share of the query's term weight (each term weighted by its
  rarity among the candidates, :func:`memdir.search.terms.term_weights`) found in the line.

The best line gives features for reranking (:func:`candidate_features`, the
:data:`~memdir.rerank.base.FEATURES` a reranker is given) and the line a snippet is centred on
(:attr:`LineScores.focus`). Every feature is defined whatever the chunk size: a
one-line chunk's best line is the chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from memdir.embeddings.base import Vectors
from memdir.markdown.chunking import text_hash
from memdir.search.terms import found_tokens

#: A line's combined score is ``cosine + LINE_COVERAGE_WEIGHT · coverage`` (cosines of e5-style
#: models sit in a narrow band, so coverage needs a small weight to break their ties).
LINE_COVERAGE_WEIGHT = 0.25


@dataclass(frozen=True)
class LineScores:
    """The lines of one candidate, scored.

    Attributes:
        cosine: per line, its cosine to the query (None: no vector for it).
        coverage: per line, its query-term coverage in [0, 1].
        focus: index of the best line (by :data:`LINE_COVERAGE_WEIGHT`-combined score).
    """

    cosine: list[float | None]
    coverage: list[float]
    focus: int

    def best_cosine(self, default: float) -> float:
        known = [c for c in self.cosine if c is not None]
        return max(known) if known else default

    def combined(self, i: int, default: float) -> float:
        cos = self.cosine[i]
        return (default if cos is None else cos) + LINE_COVERAGE_WEIGHT * self.coverage[i]


#: ``line_vectors(hashes)``: the embeddings of these line texts that are available.
LineVectors = Callable[[Sequence[str]], Mapping[str, Vectors]]


def line_key(line: str) -> str:
    """The embedding-cache key of a line (as :func:`memdir.index.sync.embedding_units` makes
    it: the stripped text)."""
    return text_hash(line.strip())


def coverage(tokens: Sequence[str], weights: Mapping[str, float]) -> float:
    """The share of the query's term weight present in ``tokens``."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    present = set(tokens)
    return sum(w for t, w in weights.items() if t in present) / total


def score_lines(
    texts: Sequence[str],
    query_vector: Vectors | None,
    weights: Mapping[str, float],
    line_vectors: LineVectors | None,
    chunk_cosines: Sequence[float],
) -> list[LineScores]:
    """Score every line of every candidate text (one :class:`LineScores` per text)."""
    split = [text.split("\n") for text in texts]
    vectors: Mapping[str, Vectors] = {}
    if query_vector is not None and line_vectors is not None:
        keys = [line_key(line) for lines in split for line in lines if line.strip()]
        vectors = line_vectors(keys)
    q = None if query_vector is None else np.asarray(query_vector, dtype=np.float32)
    # CJK runs are segmented (jieba loaded) only when a query term needs it.
    out: list[LineScores] = []
    for lines, chunk_cos in zip(split, chunk_cosines, strict=True):
        cosines: list[float | None] = []
        covers: list[float] = []
        for line in lines:
            vec = vectors.get(line_key(line)) if line.strip() and q is not None else None
            ok = vec is not None and q is not None and vec.shape == q.shape
            cosines.append(float(vec @ q) if ok and vec is not None and q is not None else None)
            covers.append(coverage(found_tokens(line, weights), weights) if line.strip() else -1.0)
        scores = LineScores(cosines, [max(0.0, c) for c in covers], 0)
        focus, best = 0, -np.inf
        for i in range(len(lines)):
            if covers[i] >= 0 and scores.combined(i, chunk_cos) > best:
                focus, best = i, scores.combined(i, chunk_cos)
        out.append(LineScores(cosines, scores.coverage, focus))
    return out


def candidate_features(
    texts: Sequence[str],
    fused: Sequence[float],
    vector: Sequence[float],
    text: Sequence[float],
    lines: Sequence[LineScores],
    weights: Mapping[str, float],
) -> list[dict[str, float]]:
    """The :data:`~memdir.rerank.base.FEATURES` of each candidate (given in fused order, best
    first)."""
    n = len(texts)
    if n == 0:
        return []
    line_cos = [ls.best_cosine(v) for ls, v in zip(lines, vector, strict=True)]
    line_cov = [max(ls.coverage) if ls.coverage else 0.0 for ls in lines]
    line_score = [ls.combined(ls.focus, v) for ls, v in zip(lines, vector, strict=True)]
    best_fused, best_cos, best_cov = max(fused), max(line_cos), max(line_cov)
    out = []
    for i in range(n):
        out.append(
            {
                "fused": fused[i],
                "fused_gap": fused[i] - best_fused,
                "vector": vector[i],
                "text": text[i],
                "rank": 1.0 / (1.0 + i),
                "line_cos": line_cos[i],
                "line_cos_gap": line_cos[i] - best_cos,
                "line_cos_lift": line_cos[i] - vector[i],
                "line_cov": line_cov[i],
                "line_cov_gap": line_cov[i] - best_cov,
                "chunk_cov": coverage(found_tokens(texts[i], weights), weights),
                "line_score": line_score[i],
            }
        )
    return out


__all__ = [
    "LINE_COVERAGE_WEIGHT",
    "LineScores",
    "LineVectors",
    "candidate_features",
    "coverage",
    "line_key",
    "score_lines",
]
