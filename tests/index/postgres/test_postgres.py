"""The PostgreSQL backend: configuration, the same answers as SQLite, concurrency across
processes and hosts, workspace isolation, one-transaction rebuilds, pgvector search.

The storage behaviour every engine shares is tested by the ``backend``-parametrised tests in
``tests/index/``; this file holds what is specific to Postgres (and its configuration, which needs
no server).
"""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memdir import FakeEmbedder, Memory, init_workspace
from memdir.config.settings import IndexConfig, index_url, load_config
from memdir.errors import ConfigError, IndexStoreError
from memdir.index.base import IndexBackend, KeywordQuery
from memdir.index.bm25 import bm25_term, lucene_idf
from memdir.index.location import default_workspace_id
from memdir.index.manager import IndexManager, IndexSettings
from memdir.text import index_tokens, query_terms
from memdir.workspace.layout import Workspace
from tests.helpers import memory_chunks, write
from tests.index.postgres.conftest import PgHelper

# -- configuration (no server needed) ----------------------------------------------------------


@pytest.mark.parametrize("key", ["url", "workspace_id"])
def test_workspace_config_may_not_choose_the_index_database(tmp_path: Path, key: str) -> None:
    ws = tmp_path / "ws"
    (ws / ".memdir").mkdir(parents=True)
    (ws / ".memdir" / "config.toml").write_text(f'[index]\n{key} = "x"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=f"index.{key}"):
        load_config(ws)


def test_user_config_chooses_the_database_and_env_overrides_it(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (isolated_env / "config.toml").write_text(
        '[index]\nurl = "postgresql://memdir@db.internal/memdir"\nworkspace_id = "team-a"\n',
        encoding="utf-8",
    )
    config = load_config()
    assert index_url(config.index) == "postgresql://memdir@db.internal/memdir"
    assert config.index.workspace_id == "team-a"
    monkeypatch.setenv("MEMDIR_INDEX_URL", "postgresql://other@db2/memdir")
    assert index_url(config.index) == "postgresql://other@db2/memdir"


def test_a_password_in_the_config_url_is_refused(isolated_env: Path) -> None:
    (isolated_env / "config.toml").write_text(
        '[index]\nurl = "postgresql://memdir:hunter2@db/memdir"\n', encoding="utf-8"
    )
    with pytest.raises(ConfigError, match="PGPASSWORD"):
        load_config()


def test_url_from_an_env_reference(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (isolated_env / "config.toml").write_text('[index]\nurl = "env:TEAM_PG"\n', encoding="utf-8")
    monkeypatch.setenv("TEAM_PG", "postgresql://memdir:s3cret@db/memdir")
    assert index_url(load_config().index) == "postgresql://memdir:s3cret@db/memdir"


def test_unknown_url_scheme_is_a_config_error(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match="postgresql://"):
        IndexSettings(url="mysql://db/x")
    path = write(isolated_env, "config.toml", '[index]\nurl = "mysql://db/x"\n')
    with pytest.raises(ConfigError, match="'mysql' is not one of: postgresql") as info:
        load_config()
    assert str(path) in str(info.value)
    monkeypatch.setenv("MEMDIR_INDEX_URL", "mysql://db/x")
    with pytest.raises(ConfigError, match="MEMDIR_INDEX_URL: scheme 'mysql'"):
        index_url(IndexConfig())


def test_missing_driver_names_the_extra(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(IndexStoreError, match=r"pip install 'psycopg\[binary\]>=3.1' 'pgvector"):
        IndexManager(
            Workspace(workspace),
            embedder=None,
            settings=IndexSettings(url="postgresql://memdir@localhost/memdir"),
        )


def test_redact_url_hides_the_password() -> None:
    from memdir.index.postgres import redact_url

    assert redact_url("postgresql://u:pw@h:5433/db?sslmode=require") == (
        "postgresql://u:***@h:5433/db?sslmode=require"
    )
    assert redact_url("postgresql://u@h/db") == "postgresql://u@h/db"


# -- against a server ----------------------------------------------------------------------------


NOTES = {
    "MEMORY.md": "# Memory\n\n## Decisions\n- Redis 分布式锁 uses port 6380, not 6379\n"
    "- We deploy with helm charts on the staging cluster\n",
    "memory/2026-11-20.md": "# 2026-11-20\n- 数据库迁移 finished: postgres 16 → 18\n"
    "- 用户偏好: 简洁的回答, no emoji\n",
    "memory/2026-11-28.md": "# 2026-11-28\n- kafka consumer lag alert fixed by raising partitions\n"
    "- 分布式 tracing with jaeger, 采样率 10%\n",
    "memory/kafka.md": "# kafka\n- topic retention is 7 days\n"
    "- kafka kafka broker upgrade to 3.7\n",
    "memory/db.md": "# 数据库\n- 数据库 连接池 size 20\n"
    "- 库 备份 nightly at 02:00 to the s3 bucket\n",
    "skills/deploy/SKILL.md": "# deploy\nRun `helm upgrade memdir ./chart` after the migration.\n",
}
QUERIES = [
    "redis port",
    "Redis 分布式锁用哪个端口?",
    "数据库",
    "库",
    "kafka broker",
    "kafka",
    "helm deploy migration",
    "用户偏好",
    "postgres upgrade",
    "备份 bucket",
    "nothing matches this zzzz",
    'quote " and \\ backslash',
]


def _seed(root: Path) -> None:
    for rel, text in NOTES.items():
        write(root, rel, text)


def _answers(root: Path, embedder: FakeEmbedder | None) -> list[list[tuple[str, int, float]]]:
    overrides = {} if embedder else {"embedding": {"provider": "none"}}
    config = load_config(root, overrides)
    with Memory(root, config=config, embedder=embedder) as mem:
        return [
            [(r.path, r.start_line, round(r.score, 6)) for r in mem.search(q).results]
            for q in QUERIES
        ]


@pytest.mark.postgres
@pytest.mark.parametrize("hybrid", [False, True], ids=["keyword", "hybrid"])
def test_postgres_answers_exactly_like_sqlite(
    pg: PgHelper, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hybrid: bool
) -> None:
    root, _ = init_workspace(tmp_path / "ws", "en")
    _seed(root)
    embedder = FakeEmbedder() if hybrid else None
    on_postgres = _answers(root, embedder)
    monkeypatch.delenv("MEMDIR_INDEX_URL")
    on_sqlite = _answers(root, embedder)
    # The same results in the same order; hybrid scores as close as SQLite's compact vectors
    # (float16/int8, memdir.index.sqlite.codec) are to PostgreSQL's float32.
    assert [[hit[:2] for hit in hits] for hits in on_postgres] == [
        [hit[:2] for hit in hits] for hits in on_sqlite
    ]
    for pg_hits, lite_hits in zip(on_postgres, on_sqlite, strict=True):
        assert [h[2] for h in pg_hits] == pytest.approx([h[2] for h in lite_hits], abs=2e-3)
    assert sum(1 for hits in on_sqlite if hits) >= 9  # the comparison is not vacuous


@pytest.mark.postgres
def test_candidates_on_a_common_term_are_the_true_bm25_top(pg: PgHelper, tmp_path: Path) -> None:
    """With more matches than candidates, the SQL pre-ranking still finds BM25's top k."""
    root, _ = init_workspace(tmp_path / "ws", "en")
    (root / "MEMORY.md").unlink()
    for i in range(150):
        filler = " ".join(f"w{(i * 7 + j) % 97}" for j in range(i))  # unique lengths
        rare = " kafka" * (i % 3)
        write(root, f"memory/n{i}.md", f"deploy{rare} note {filler}\n")
    mgr = pg.manager(root)
    mgr.sync()
    store = mgr.store()
    stats = store.corpus_stats()
    terms = query_terms("deploy kafka")
    df = store.document_frequencies(terms)
    idf = {t: lucene_idf(stats.documents, df[t]) for t in terms}
    exact = []
    for i in range(150):
        tokens = index_tokens((root / f"memory/n{i}.md").read_text(encoding="utf-8"))
        score = sum(
            bm25_term(tokens.count(t), len(tokens), stats.avg_length, idf[t]) for t in terms
        )
        exact.append((round(score, 9), f"memory/n{i}.md"))
    exact.sort(key=lambda item: -item[0])
    query = KeywordQuery.build(terms)
    assert query is not None
    hits = mgr.keyword_search(query, 10)
    rows = store.chunks_by_seq([seq for seq, _ in hits])
    found = [rows[seq].path for seq, _ in hits]
    assert {p for _, p in exact[:10]} == set(found)
    pg.check_aggregates(mgr.workspace_id)


@pytest.mark.postgres
def test_status_names_the_backend_without_the_password(
    pg: PgHelper, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        mem.sync()
        status = mem.status()
    assert status["backend"] == "postgres"
    assert status["vector_backend"] == "pgvector-hnsw"
    assert default_workspace_id(Workspace(workspace)) in status["index_path"]
    assert status["files"] == 1 and status["pending_vectors"] == 0
    monkeypatch.delenv("MEMDIR_INDEX_URL")
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        assert mem.status()["backend"] == "sqlite"


@pytest.mark.postgres
def test_workspaces_in_one_database_do_not_see_each_other(pg: PgHelper, tmp_path: Path) -> None:
    roots = []
    for name, word in (("a", "alphaword"), ("b", "betaword")):
        root, _ = init_workspace(tmp_path / name, "en")
        write(root, "memory/x.md", f"shared words and {word}\n")
        roots.append(root)
    first, second = (pg.manager(r, FakeEmbedder()) for r in roots)
    first.sync()
    second.sync()
    assert first.workspace_id != second.workspace_id
    assert first.keyword_search(KeywordQuery(("betaword",)), 5) == []
    assert second.keyword_search(KeywordQuery(("betaword",)), 5)
    assert first.store().document_frequencies(["alphaword", "betaword"]) == {"alphaword": 1}
    expected = memory_chunks(roots[0]) + 1
    assert first.store().counts()["chunks"] == second.store().counts()["chunks"] == expected
    query = FakeEmbedder().embed_query("shared words and betaword")
    own = {seq for seq, _ in first.vector_search(query, 10)}
    assert own == {int(s) for s in first.store().all_vectors()[0]}


@pytest.mark.postgres
def test_hosts_sharing_a_workspace_do_not_rehash_or_prune_each_other(
    pg: PgHelper, tmp_path: Path
) -> None:
    """Two hosts, each with its own copy of the files (different paths and mtimes)."""
    host_a, _ = init_workspace(tmp_path / "host-a", "en")
    host_b, _ = init_workspace(tmp_path / "host-b", "en")
    for root in (host_a, host_b):
        write(root, "memory/common.md", "the same note on both hosts\n")
    write(host_a, "memory/only-a.md", "written on host a, not pulled by b yet\n")
    a = pg.manager(host_a, workspace_id="team")
    b = pg.manager(host_b, workspace_id="team")
    a.sync()
    report = b.sync()
    assert report.removed == 0  # b never saw only-a.md: it is not b's to prune
    assert "memory/only-a.md" in a.store().file_rows()
    assert b.keyword_search(KeywordQuery(("pull",)), 5)  # b's searches find a's note
    assert not a.refresh()  # b's sync did not make a's files look changed
    assert not b.refresh()
    pg.check_aggregates("team")


def _index_repeatedly(url: str, root: str, rounds: int, queue: Any) -> None:
    try:
        mgr = IndexManager(
            Workspace(root), embedder=FakeEmbedder(), settings=IndexSettings(url=url)
        )
        for i in range(rounds):
            mgr.sync(force=i % 5 == 0)
            mgr.keyword_search(KeywordQuery(("shared",)), 5)
        mgr.close()
        queue.put("ok")
    except Exception as exc:  # report any failure to the parent
        queue.put(f"{type(exc).__name__}: {exc}")


@pytest.mark.postgres
def test_two_processes_indexing_the_same_files_do_not_duplicate(
    pg: PgHelper, workspace: Path
) -> None:
    for i in range(12):
        write(workspace, f"memory/n{i}.md", f"shared note {i}\n" + "filler line\n" * 30)
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=_index_repeatedly, args=(pg.url, str(workspace), 15, queue))
        for _ in range(2)
    ]
    for p in procs:
        p.start()
    for i in range(20):  # edits while both index
        write(workspace, f"memory/n{i % 12}.md", f"shared note {i} edited\n" + "more\n" * i)
    for p in procs:
        p.join(180)
    assert [queue.get(timeout=5) for _ in procs] == ["ok", "ok"]
    mgr = pg.manager(workspace, FakeEmbedder())
    mgr.sync()
    counts = mgr.store().counts()
    assert counts["files"] == 13 and counts["pending_vectors"] == 0
    pg.check_aggregates(mgr.workspace_id)


@pytest.mark.postgres
def test_writers_without_the_manager_lock_still_serialise(pg: PgHelper, workspace: Path) -> None:
    """Two raw stores replace the same file concurrently: the transaction-level advisory lock
    and the unique chunk ids keep one copy of each chunk."""
    from concurrent.futures import ThreadPoolExecutor

    from memdir.index.base import NewChunk
    from memdir.index.postgres import PostgresStore

    workspace_id = default_workspace_id(Workspace(workspace))
    stores = [PostgresStore.open(pg.url, workspace_id, f"host{i}") for i in range(2)]
    chunks = [
        NewChunk(f"id{i}", i + 1, i + 1, f"h{i}", f"line {i}", f"line {i}", None) for i in range(50)
    ]

    def replace(store: PostgresStore) -> None:
        for _ in range(10):
            store.replace_file(
                path="memory/x.md",
                source="memory",
                hash="h",
                mtime_ns=1,
                size=1,
                warning=None,
                model="m",
                chunks=chunks,
            )

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(replace, stores))
    assert stores[0].counts()["chunks"] == 50
    pg.check_aggregates(workspace_id)
    for store in stores:
        store.close()


@pytest.mark.postgres
def test_rebuild_is_one_transaction(pg: PgHelper, workspace: Path) -> None:
    """While an identity change rebuilds, other connections still read the old index."""
    write(workspace, "memory/a.md", "phoenix rises\n")
    old = pg.manager(workspace, FakeEmbedder(dims=32))
    old.sync()
    reader = pg.manager(workspace, FakeEmbedder(dims=32))
    before = reader.store().counts()
    new = pg.manager(workspace, FakeEmbedder(dims=48))
    seen: list[tuple[dict[str, int], bool]] = []
    original = new.lifecycle.rebuild

    def rebuild_and_peek(fill: Callable[[IndexBackend], None]) -> None:
        def fill_and_peek(store: IndexBackend) -> None:
            fill(store)
            seen.append((reader.store().counts(), reader.identity_matches()))

        original(fill_and_peek)

    new.lifecycle.rebuild = rebuild_and_peek
    new.sync()
    assert seen == [(before, True)]  # mid-rebuild: the old index, whole
    assert not reader.identity_matches() and new.identity_matches()
    assert reader.store().all_vectors()[1].shape[1] == 48


@pytest.mark.postgres
def test_writer_lock_waits_for_the_other_process(pg: PgHelper, workspace: Path) -> None:
    first = pg.manager(workspace)
    second = pg.manager(workspace)
    with first.write_lock():
        with (
            pytest.raises(IndexStoreError, match="another memdir process"),
            second.write_lock(timeout=0.3),
        ):
            pass
        with first.write_lock():  # re-entrant for its holder
            pass
    with second.write_lock(timeout=5):
        pass
    with first.write_lock():
        first.close()  # a holder whose connection dies …
        with second.write_lock(timeout=5):  # … blocks nobody
            pass


@pytest.mark.postgres
def test_a_lost_connection_is_reopened(pg: PgHelper, workspace: Path) -> None:
    write(workspace, "memory/a.md", "resilient words\n")
    mgr = pg.manager(workspace)
    mgr.sync()
    pid = mgr.store().conn.info.backend_pid
    pg.conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
    assert mgr.keyword_search(KeywordQuery(("resili",)), 5)


@pytest.mark.postgres
def test_hnsw_and_exact_search_agree_on_a_small_index(pg: PgHelper, workspace: Path) -> None:
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    words += ["eta", "theta", "iota", "kappa", "lambda", "mu"]
    for i in range(120):
        write(workspace, f"memory/n{i}.md", " ".join(words[(i * j) % 12] for j in range(9)))
    mgr = pg.manager(workspace, FakeEmbedder())
    mgr.sync()
    store = mgr.store()
    seqs, matrix = store.all_vectors()
    for text in ["alpha beta", "kappa lambda mu", "zeta eta theta iota"]:
        query = FakeEmbedder().embed_query(text)
        exact = store.nearest(query, 10, exact=True)
        ann = store.nearest(query, 10, exact=False)
        scores = matrix @ query
        assert [s for _, s in exact] == pytest.approx(sorted(scores, reverse=True)[:10], abs=1e-5)
        assert [s for _, s in ann] == pytest.approx([s for _, s in exact], abs=1e-5)
    assert len(seqs) == store.counts()["chunks"]


@pytest.mark.postgres
def test_too_many_dimensions_for_hnsw_search_exactly(pg: PgHelper, workspace: Path) -> None:
    write(workspace, "memory/a.md", "wide vectors here\n")
    mgr = pg.manager(workspace, FakeEmbedder(dims=2100))
    mgr.sync()
    query = FakeEmbedder(dims=2100).embed_query("wide vectors here")
    assert mgr.vector_search(query, 1)[0][1] > 0.99
    assert any("HNSW" in note for note in mgr.notes)


@pytest.mark.postgres
def test_odd_terms_and_text_are_stored_and_quoted(pg: PgHelper, workspace: Path) -> None:
    (workspace / "memory" / "odd.md").write_bytes(
        b"it's a back\\slash note" + b" filler" * 2000 + b"\x00 after a nul\n"
    )
    mgr = pg.manager(workspace)
    mgr.sync()
    odd = KeywordQuery(("it's", "back\\slash", 'a"b'))
    assert mgr.keyword_search(odd, 5) == []
    assert mgr.keyword_search(KeywordQuery(("slash",)), 5)
    assert mgr.keyword_search(KeywordQuery(("nul",)), 5)
    pg.check_aggregates(mgr.workspace_id)


@pytest.mark.postgres
def test_edits_and_deletes_keep_the_term_table_exact(pg: PgHelper, workspace: Path) -> None:
    write(workspace, "memory/a.md", "kafka broker kafka\n")
    write(workspace, "memory/b.md", "kafka topic\n")
    mgr = pg.manager(workspace)
    mgr.sync()
    assert mgr.store().document_frequencies(["kafka", "broker"]) == {"kafka": 2, "broker": 1}
    write(workspace, "memory/a.md", "zookeeper only\n")
    (workspace / "memory" / "b.md").unlink()
    mgr.sync()
    assert mgr.store().document_frequencies(["kafka", "broker", "zookeep"]) == {"zookeep": 1}
    pg.check_aggregates(mgr.workspace_id)
    mgr.sync(force=True)
    pg.check_aggregates(mgr.workspace_id)
