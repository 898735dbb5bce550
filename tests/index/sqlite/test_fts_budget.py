"""The keyword leg's scan budget (``memdir.index.sqlite.fts.SCAN_BUDGET``): a query whose terms
are found in more rows than the budget is answered from its rare terms, with the common terms
filling up, and gives the same chunks as an unbounded scan when the rare terms decide
(docs/design.md#keyword-search)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdir.index.base import KeywordQuery
from memdir.index.bm25 import term_idf
from memdir.index.manager import IndexManager
from memdir.index.sqlite import fts
from memdir.index.sqlite.store import SqliteStore
from memdir.workspace.layout import Workspace
from tests.helpers import write


@pytest.fixture
def store(workspace: Path) -> SqliteStore:
    # 30 notes say "meeting" (the common term); three also name the rare "zanzibar".
    for i in range(30):
        rare = " about zanzibar" if i in (4, 17, 25) else ""
        write(workspace, f"memory/n{i:02d}.md", f"# day {i}\nmeeting number {i}{rare}\n")
    mgr = IndexManager(Workspace(workspace), embedder=None)
    mgr.sync()
    found = mgr.store()
    assert isinstance(found, SqliteStore)
    return found


def _paths(store: SqliteStore, seqs: list[int]) -> list[str]:
    rows = store.chunks_by_seq(seqs)
    return [rows[s].path for s in seqs]


def _candidates(store: SqliteStore, query: KeywordQuery, limit: int) -> list[int]:
    stats = store.corpus_stats()
    idf = term_idf(store, query.terms, stats)
    return [seq for seq, _ in store.keyword_candidates(query, idf, limit, stats)]


def test_under_the_budget_every_matching_row_is_ranked(store: SqliteStore) -> None:
    query = KeywordQuery.build(["zanzibar", "meet"])
    assert query is not None
    top = _paths(store, _candidates(store, query, 3))
    assert sorted(top) == ["memory/n04.md", "memory/n17.md", "memory/n25.md"]


def test_over_the_budget_the_rare_terms_choose_and_the_common_fill(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    query = KeywordQuery.build(["zanzibar", "meet"])
    assert query is not None
    unbounded = _candidates(store, query, 3)
    monkeypatch.setattr(fts, "SCAN_BUDGET", 5)  # "meet" (30 rows) no longer fits
    assert _candidates(store, query, 3) == unbounded
    more = _candidates(store, query, 8)
    assert len(more) == 8 and more[:3] == unbounded
    # the fill: the newest chunks that hold the common term, not a ranking of all 30
    assert more[3:] == sorted(more[3:], reverse=True)
    assert all("meet" in tokens.split() for _, tokens in store.stored_tokens(more[3:]))


def test_only_common_terms_over_the_budget_still_find_rows(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fts, "SCAN_BUDGET", 5)
    query = KeywordQuery.build(["meet", "number"])
    assert query is not None
    found = _candidates(store, query, 6)
    assert len(found) == 6 and len(set(found)) == 6


def test_document_frequencies_are_read_again_after_a_write(workspace: Path) -> None:
    write(workspace, "memory/a.md", "the zanzibar note\n")
    mgr = IndexManager(Workspace(workspace), embedder=None)
    mgr.sync()
    store = mgr.store()
    assert store.document_frequencies(["zanzibar", "absent"]) == {"zanzibar": 1}
    assert store.document_frequencies(["zanzibar"]) == {"zanzibar": 1}  # kept
    write(workspace, "memory/b.md", "zanzibar again\n")
    mgr.sync()
    assert store.document_frequencies(["zanzibar", "absent"]) == {"zanzibar": 2}
