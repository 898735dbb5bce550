"""memdir's BM25 over the engine's candidates: hand-computed values and small-corpus behaviour,
on each storage backend."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from memdir import Memory
from memdir.config.settings import load_config
from memdir.index.base import KeywordQuery
from memdir.index.bm25 import (
    K1,
    B,
    bm25_search,
    bm25_term,
    bm25_to_score,
    corpus_stats,
    lucene_idf,
)
from memdir.text import query_terms
from tests.helpers import write
from tests.index.conftest import Backend


def test_lucene_idf_stays_positive() -> None:
    assert lucene_idf(2, 1) == pytest.approx(math.log(2))
    assert lucene_idf(2, 2) > 0  # FTS5's IDF would be ~0 here
    assert lucene_idf(1000, 1) > lucene_idf(1000, 10) > lucene_idf(1000, 900) > 0


def test_bm25_term_matches_the_formula() -> None:
    idf = 2.0
    expected = idf * 3 * (K1 + 1) / (3 + K1 * (1 - B + B * 20 / 10))
    assert bm25_term(3, 20, 10.0, idf) == pytest.approx(expected)
    assert bm25_term(0, 20, 10.0, idf) == 0.0
    # Longer documents score lower for the same term frequency.
    assert bm25_term(1, 5, 10.0, idf) > bm25_term(1, 50, 10.0, idf)


@pytest.mark.parametrize("score", [0.001, 1.0, 5.0, 100.0])
def test_bm25_to_score_is_in_unit_interval_and_monotonic(score: float) -> None:
    mapped = bm25_to_score(score)
    assert 0 < mapped < 1
    assert bm25_to_score(score * 2) > mapped
    rank = -score  # an FTS5 rank is the negated sum: OpenClaw maps it by -r / (1 - r)
    assert mapped == pytest.approx(-rank / (1 - rank))


def test_bm25_to_score_edge_cases() -> None:
    assert bm25_to_score(0.0) == 0.0
    assert bm25_to_score(-3.0) == 0.0
    assert bm25_to_score(math.nan) == 0.0
    assert bm25_to_score(math.inf) == 0.0


def test_bm25_search_ranks_by_hand_computed_scores(backend: Backend, workspace: Path) -> None:
    (workspace / "MEMORY.md").unlink()
    write(workspace, "memory/a.md", "kafka kafka broker\n")
    write(workspace, "memory/b.md", "kafka topic retention settings here\n")
    write(workspace, "memory/c.md", "postgres vacuum\n")
    mgr = backend.manager(workspace)
    mgr.sync()
    store = mgr.store()
    stats = corpus_stats(store)
    assert stats.documents == 3
    assert stats.avg_length == pytest.approx((3 + 5 + 2) / 3)
    terms = query_terms("kafka broker")
    hits = bm25_search(store, KeywordQuery(tuple(terms)), 5, stats)
    idf_kafka, idf_broker = lucene_idf(3, 2), lucene_idf(3, 1)
    expected_a = bm25_term(2, 3, stats.avg_length, idf_kafka) + bm25_term(
        1, 3, stats.avg_length, idf_broker
    )
    expected_b = bm25_term(1, 5, stats.avg_length, idf_kafka)
    assert [round(s, 6) for _, s in hits] == [round(expected_a, 6), round(expected_b, 6)]


def test_keyword_scores_are_meaningful_in_a_two_note_workspace(
    backend: Backend, workspace: Path
) -> None:
    (workspace / "MEMORY.md").unlink()
    write(workspace, "memory/a.md", "- private passphrase is bluebird\n")
    write(workspace, "memory/b.md", "- lunch at noon\n")
    config = load_config(workspace, {"embedding": {"provider": "none"}})
    with Memory(workspace, config=config) as mem:
        hit = mem.search("bluebird").results[0]
    assert hit.path == "memory/a.md"
    assert hit.explain["text"] > 0.3  # FTS5's bm25 gave ~1e-6 here


def test_term_weights_multiply_the_idf_and_can_turn_the_ranking(
    backend: Backend, workspace: Path
) -> None:
    (workspace / "MEMORY.md").unlink()
    write(workspace, "memory/a.md", "kafka broker restart\n")
    write(workspace, "memory/b.md", "postgres vacuum schedule\n")
    mgr = backend.manager(workspace)
    mgr.sync()
    store = mgr.store()
    stats = corpus_stats(store)
    terms = query_terms("kafka postgres")
    postgres = terms[1]
    idf = lucene_idf(2, 1)
    plain = bm25_search(store, KeywordQuery(tuple(terms)), 5, stats)
    assert plain[0][1] == pytest.approx(plain[1][1])  # one term each, same IDF: a tie
    weighted = KeywordQuery.build(terms, weights={postgres: 3.0})
    assert weighted is not None
    hits = bm25_search(store, weighted, 5, stats)
    expected = bm25_term(1, 3, stats.avg_length, 3.0 * idf)
    assert hits[0][1] == pytest.approx(expected)
    assert store.chunks_by_seq([hits[0][0]])[hits[0][0]].path == "memory/b.md"
    # The manager's keyword leg and its scoring of chosen chunks weigh alike.
    leg = dict(mgr.keyword_search(weighted, 5))
    assert leg == mgr.keyword_scores(weighted, list(leg))
    assert leg[hits[0][0]] > leg[hits[1][0]]
