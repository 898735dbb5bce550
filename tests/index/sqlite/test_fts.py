"""The SQLite engine's keyword search: a KeywordQuery becomes a quoted FTS5 MATCH expression
that FTS5 always accepts, whatever the terms hold."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memdir import Memory
from memdir.index.base import KeywordQuery
from memdir.index.sqlite.fts import DF_MEMO_TERMS, fts5_match
from tests.helpers import write


def test_every_term_is_quoted_and_joined_by_the_mode() -> None:
    assert fts5_match(KeywordQuery(("redis", "分布式"))) == '"redis" OR "分布式"'
    assert fts5_match(KeywordQuery(("redis", "port"), "and")) == '"redis" AND "port"'
    assert fts5_match(KeywordQuery(('a"b',))) == '"a""b"'


@pytest.fixture(scope="module")
def fts() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(tokens)")
    conn.executemany(
        "INSERT INTO t(tokens) VALUES (?)",
        [("near and or not",), ('quote " star * minus -',), ("plain words",)],
    )
    return conn


@given(
    terms=st.lists(st.text(min_size=1).filter(str.strip), min_size=1, max_size=5),
    mode=st.sampled_from(["or", "and"]),
)
def test_fts5_accepts_any_terms(fts: sqlite3.Connection, terms: list[str], mode: str) -> None:
    query = KeywordQuery.build(terms, mode)
    assert query is not None
    fts.execute("SELECT rowid FROM t WHERE t MATCH ?", (fts5_match(query),)).fetchall()


def test_operators_inside_terms_are_ordinary_words(fts: sqlite3.Connection) -> None:
    query = KeywordQuery(("near", "and"), "and")
    rows = fts.execute("SELECT tokens FROM t WHERE t MATCH ?", (fts5_match(query),)).fetchall()
    assert rows == [("near and or not",)]


def test_document_frequencies_survive_a_full_memo(workspace: Path) -> None:
    """A long-running server asks many distinct terms: once the memo is full it starts over,
    and a query mixing a term seen before with a new one still gets both (it raised
    KeyError for the seen one)."""
    write(workspace, "memory/a.md", "- alpha beta\n")
    with Memory(workspace) as mem:
        mem.sync()
        store = mem.index.store()
        assert store.document_frequencies(["alpha"]) == {"alpha": 1}
        store.document_frequencies([f"t{i}" for i in range(DF_MEMO_TERMS + 2)])
        assert store.document_frequencies(["alpha", "beta", "gamma"]) == {"alpha": 1, "beta": 1}
