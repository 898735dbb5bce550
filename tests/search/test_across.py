"""Across languages (``search/across.py``): a note of the other language is scored on the model's
own cosine scale, from its centred cosine and its companion cosine; a note of the question's
language keeps its cosine."""

from __future__ import annotations

import numpy as np
import pytest

from memdir.index.base import ChunkRow
from memdir.search.across import (
    COMPANION,
    Across,
    CrossScale,
    LanguageMeans,
    centred_query,
    language_share,
    rescore,
)
from memdir.search.types import Candidate

DIMS = 8


def _unit(*values: float) -> np.ndarray:
    v = np.zeros(DIMS, dtype=np.float32)
    v[: len(values)] = values
    return v / np.linalg.norm(v)


# English text leans one way, Chinese text another: the means a small model keeps.
MEANS = LanguageMeans(
    english=_unit(0, 0, 0, 0, 0, 0, 1) * 0.5,
    chinese=_unit(0, 0, 0, 0, 0, 0, 0, 1) * 0.5,
    english_query=_unit(0, 0, 0, 0, 0, 0, 1) * 0.5,
    chinese_query=_unit(0, 0, 0, 0, 0, 0, 0, 1) * 0.5,
)
SCALE = CrossScale(alpha=0.6, beta=0.2)


def _cand(seq: int, text: str, cosine: float) -> Candidate:
    return Candidate(
        ChunkRow(seq, f"c{seq}", "memory/n.md", "memory", 1, 1, text),
        vector=cosine,
        has_vector=True,
    )


def test_language_share_counts_cjk_against_latin_words() -> None:
    assert language_share("When does the points redesign launch?") == 0.0
    assert language_share("会员积分改版什么时候上线") == 1.0
    assert 0.0 < language_share("Redis 分布式锁用哪个端口") < 1.0


def test_a_centred_query_has_its_language_taken_out() -> None:
    query = _unit(1, 0, 0, 0, 0, 0, 1)
    centred = centred_query(query, 0.0, MEANS)
    assert float(np.linalg.norm(centred)) == pytest.approx(1.0)
    assert centred[6] < query[6]  # less of English's own direction


def test_a_note_of_the_other_language_is_put_on_the_cosine_scale() -> None:
    meaning = _unit(1, 1, 0, 0)
    note = meaning + MEANS.chinese  # the same meaning, written in Chinese
    same = _cand(1, "the points redesign launches in January", 0.85)
    other = _cand(2, "会员积分改版定在 1 月 15 日上线", 0.70)
    companion_query = _unit(1, 0, 0)
    across = Across(
        MEANS,
        lambda seqs: {2: note / np.linalg.norm(note)},
        lambda seqs: {2: _unit(1, 0, 0)},  # the companion says: the same sentence
        SCALE,
    )
    query = meaning + MEANS.english_query
    rescore([same, other], "When does the points redesign launch?", query, across, companion_query)
    assert same.vector == 0.85 and same.cosine is None  # the question's language: untouched
    assert other.cosine == pytest.approx(0.70)
    stored = note / np.linalg.norm(note) - MEANS.chinese
    centred = float(stored @ centred_query(query, 0.0, MEANS) / np.linalg.norm(stored))
    assert other.vector == pytest.approx(SCALE.alpha + SCALE.beta * (centred + COMPANION * 1.0))
    assert other.vector > 0.85  # it says the same thing: it outranks the weaker English match


def test_an_unrelated_note_of_the_other_language_stays_low() -> None:
    """The scale is fixed, not the search's own: an off-topic question's best candidate of the
    other language is not raised to look like an answer."""
    unrelated = _unit(0, 0, 1, 1) + MEANS.chinese
    other = _cand(2, "红烧肉先焯水再炒糖色", 0.80)
    across = Across(
        MEANS,
        lambda seqs: {2: unrelated / np.linalg.norm(unrelated)},
        lambda seqs: {2: _unit(0, 1, 0)},
        SCALE,
    )
    query = _unit(1, 1, 0, 0) + MEANS.english_query
    rescore([other], "who won the 1998 World Cup", query, across, _unit(1, 0, 0))
    assert other.vector < SCALE.alpha + SCALE.beta * 0.2


def test_without_a_stored_vector_the_cosine_stays() -> None:
    other = _cand(2, "会员积分改版", 0.7)
    across = Across(MEANS, lambda seqs: {}, None, SCALE)
    rescore([other], "points redesign", _unit(1, 1), across)
    assert other.vector == 0.7 and other.cosine is None
