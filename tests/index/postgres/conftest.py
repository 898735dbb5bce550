"""The fixtures of the PostgreSQL tests: managers on the test database, a raw connection for
checks, and the cleanup of every workspace a test made."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memdir.index.manager import IndexManager, IndexSettings
from memdir.workspace.layout import Workspace
from tests.index.conftest import drop_workspaces, workspace_ids


@pytest.fixture
def pg(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[PgHelper]:
    helper = PgHelper(pg_url)
    monkeypatch.setenv("MEMDIR_INDEX_URL", pg_url)
    try:
        yield helper
    finally:
        helper.cleanup()


class PgHelper:
    """Managers on the test database, a raw connection for checks, and cleanup."""

    def __init__(self, url: str) -> None:
        import psycopg

        self.url = url
        self.conn = psycopg.connect(url, autocommit=True)
        self.before = workspace_ids(url)
        self.managers: list[IndexManager] = []

    def manager(self, root: Path, embedder: Any = None, **kwargs: Any) -> IndexManager:
        mgr = IndexManager(
            Workspace(root), embedder=embedder, settings=IndexSettings(url=self.url, **kwargs)
        )
        self.managers.append(mgr)
        return mgr

    def check_aggregates(self, workspace_id: str) -> None:
        """The term table and the corpus counters agree with the chunks themselves."""
        actual = dict(
            self.conn.execute(
                "SELECT t.lexeme, count(*) FROM memdir_chunks c, unnest(c.tsv) AS t "
                "WHERE c.workspace_id = %s GROUP BY t.lexeme",
                (workspace_id,),
            ).fetchall()
        )
        kept = dict(
            self.conn.execute(
                "SELECT term, df FROM memdir_terms WHERE workspace_id = %s", (workspace_id,)
            ).fetchall()
        )
        assert kept == actual
        counters = self.conn.execute(
            "SELECT chunk_count, token_total FROM memdir_workspaces WHERE workspace_id = %s",
            (workspace_id,),
        ).fetchone()
        real = self.conn.execute(
            "SELECT count(*), coalesce(sum(token_count), 0) FROM memdir_chunks "
            "WHERE workspace_id = %s",
            (workspace_id,),
        ).fetchone()
        assert tuple(counters) == tuple(real)
        duplicates = self.conn.execute(
            "SELECT count(*) - count(DISTINCT (path, start_line, end_line, hash)) "
            "FROM memdir_chunks WHERE workspace_id = %s",
            (workspace_id,),
        ).fetchone()[0]
        assert duplicates == 0

    def cleanup(self) -> None:
        for mgr in self.managers:
            mgr.close()
        drop_workspaces(self.url, workspace_ids(self.url) - self.before)
        self.conn.close()
