"""Hosts sharing one PostgreSQL index (issue 37): every host's copy of a file keeps its rows,
so a fact one host indexed is never hidden by another host's copy of the same file; a hit from
a copy this host does not have reads back through ``memory_get``; a large workspace gets its
own HNSW index; an index made by schema 3 upgrades without embedding anything again."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from memdir import FakeEmbedder, Memory, init_workspace
from memdir.config.settings import load_config
from memdir.index.postgres import lifecycle as pg_lifecycle
from memdir.index.postgres import vectors as pg_vectors
from memdir.index.postgres.schema import (
    MIGRATIONS,
    migrate,
    workspace_index_name,
    workspace_index_state,
)
from tests.helpers import write
from tests.index.postgres.conftest import PgHelper

DAY = "memory/2026-12-04.md"


def _host(root: Path, url: str, workspace_id: str = "team") -> Memory:
    config = load_config(root, {"index": {"url": url, "workspace_id": workspace_id}})
    return Memory(root, config=config, embedder=FakeEmbedder())


def _hit(mem: Memory, query: str, needle: str) -> Any:
    for result in mem.search(query).results:
        if needle in result.snippet:
            return result
    return None


@pytest.mark.postgres
def test_one_hosts_copy_never_hides_anothers(pg: PgHelper, tmp_path: Path) -> None:
    """The issue's two hosts: both write the same day's log; each fact stays findable on
    both, and a hit from the other host's copy reads back with its text."""
    root_a, _ = init_workspace(tmp_path / "a", "en")
    root_b, _ = init_workspace(tmp_path / "b", "en")
    write(root_a, DAY, "# 2026-12-04\n- the release window moved to wednesday afternoon\n")
    write(root_a, "memory/only-a.md", "# only a\n- the pager rotation starts on mondays\n")
    write(root_b, DAY, "# 2026-12-04\n- the staging cluster moves to eu-west-2\n")
    with _host(root_a, pg.url) as a, _host(root_b, pg.url) as b:
        a.sync()
        b.sync()
        a_host = a.index.lifecycle.host  # type: ignore[attr-defined]
        own = _hit(a, "release window wednesday", "release window")
        assert own is not None and own.copy == ""  # b's copy of the day did not hide it
        theirs = _hit(b, "release window wednesday", "release window")
        assert theirs is not None and theirs.copy == a_host
        got = b.get(theirs.path, from_line=theirs.start_line, lines=2, copy=theirs.copy)
        assert "release window" in got.text and got.copy == a_host
        assert got.to_dict()["note"].startswith("the hit's copy")
        assert (b.get(DAY).text or "").count("staging") == 1  # no copy named: b's own file
        missing = b.get("memory/only-a.md")  # not on b yet: from a's copy, said so
        assert missing.exists and "pager rotation" in missing.text
        assert "not on this host yet" in missing.note
        assert _hit(a, "staging cluster", "staging").copy != ""
        # After a sync both copies hold both facts: one row per chunk, held by both hosts.
        both = "# 2026-12-04\n- the release window moved to wednesday afternoon\n"
        both += "- the staging cluster moves to eu-west-2\n"
        write(root_a, DAY, both)
        write(root_b, DAY, both)
        a.sync()
        b.sync()
        for mem in (a, b):
            hit = _hit(mem, "release window wednesday", "release window")
            assert hit is not None and hit.copy == ""
            assert "release window" in mem.get(hit.path, from_line=hit.start_line).text
    pg.check_aggregates("team")
    shared = pg.conn.execute(
        "SELECT count(DISTINCT h.host) FROM memdir_holders h JOIN memdir_chunks c "
        "ON c.seq = h.seq WHERE c.workspace_id = 'team' AND c.path = %s",
        (DAY,),
    ).fetchone()[0]
    assert shared == 2
    stale = pg.conn.execute(
        "SELECT count(*) FROM memdir_chunks c WHERE c.workspace_id = 'team' AND NOT EXISTS "
        "(SELECT 1 FROM memdir_holders h WHERE h.seq = c.seq)"
    ).fetchone()[0]
    assert stale == 0  # the old versions were released and deleted


@pytest.mark.postgres
def test_a_host_drops_only_its_own_copy(pg: PgHelper, tmp_path: Path) -> None:
    root_a, _ = init_workspace(tmp_path / "a", "en")
    root_b, _ = init_workspace(tmp_path / "b", "en")
    for root in (root_a, root_b):
        write(root, "memory/topic.md", "# topic\n- kubernetes upgrade planned for friday\n")
    with _host(root_a, pg.url) as a, _host(root_b, pg.url) as b:
        a.sync()
        b.sync()
        (root_a / "memory" / "topic.md").unlink()
        a.sync()
        assert _hit(a, "kubernetes upgrade", "kubernetes") is not None  # b still has it
        (root_b / "memory" / "topic.md").unlink()
        b.sync()
        assert _hit(a, "kubernetes upgrade", "kubernetes") is None
        time.sleep(pg_lifecycle.GENERATION_REUSE_S)  # a's counts follow b's write by then
        assert a.index.counts()["files"] == b.index.counts()["files"]
    pg.check_aggregates("team")


@pytest.mark.postgres
def test_a_large_workspace_gets_its_own_hnsw_index(
    pg: PgHelper, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg_lifecycle, "EXACT_SEARCH_MAX", 60)
    monkeypatch.setattr(pg_vectors, "EXACT_SEARCH_MAX", 60)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    words += ["eta", "theta", "iota", "kappa", "lambda", "mu"]
    big, _ = init_workspace(tmp_path / "big", "en")
    small, _ = init_workspace(tmp_path / "small", "en")
    for i in range(120):
        write(big, f"memory/n{i}.md", " ".join(words[(i * j) % 12] for j in range(9)) + "\n")
    write(small, "memory/one.md", "alpha beta\n")
    with _host(big, pg.url, "big-ws") as mem, _host(small, pg.url, "small-ws") as other:
        mem.sync()
        other.sync()
        dims = FakeEmbedder().dims
        assert workspace_index_state(pg.conn, "big-ws", dims) == "ready"
        assert workspace_index_state(pg.conn, "small-ws", dims) == "missing"
        store: Any = mem.index.store()
        assert store.hnsw_index(dims, fresh=True) == workspace_index_name("big-ws", dims)
        query = FakeEmbedder().embed_query("alpha beta gamma")
        exact = store.nearest(query, 10, exact=True)
        ann = store.nearest(query, 10, exact=False)
        assert [s for _, s in ann] == pytest.approx([s for _, s in exact], abs=1e-5)
        with pg.conn.transaction():
            # A few rows: the planner would sort them; without sorting only HNSW can order.
            pg.conn.execute("SET LOCAL enable_seqscan = off")
            pg.conn.execute("SET LOCAL enable_sort = off")
            plan = pg.conn.execute(
                f"EXPLAIN SELECT seq FROM memdir_vectors WHERE workspace_id = 'big-ws' "
                f"AND dims = {dims} ORDER BY embedding::vector({dims}) <=> "
                f"array_fill(0.1, ARRAY[{dims}])::vector({dims}) LIMIT 10"
            ).fetchall()
        assert workspace_index_name("big-ws", dims) in " ".join(str(r[0]) for r in plan)
    pg.conn.execute(f"DROP INDEX IF EXISTS {workspace_index_name('big-ws', dims)}")


@pytest.mark.postgres
def test_an_index_of_schema_3_upgrades_without_embedding_again(
    pg: PgHelper, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rows of schema 3 (``memdir_file_seen``, no copies) become each host's copy; the
    host reads its files once more and keeps every chunk and vector."""
    import psycopg

    schema = "memdir_upgrade_37"
    pg.conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    pg.conn.execute(f"CREATE SCHEMA {schema}")
    url = pg.url + ("&" if "?" in pg.url else "?") + f"options=-csearch_path%3D{schema},public"
    monkeypatch.setenv("MEMDIR_INDEX_URL", url)  # every table of this test in its own schema
    root, _ = init_workspace(tmp_path / "ws", "en")
    write(root, DAY, "# 2026-12-04\n- the backup bucket is rotated every sunday\n")
    try:
        with _host(root, url, "upgrade") as mem:
            mem.sync()
            before = mem.index.counts()
        with psycopg.connect(url, autocommit=True) as conn:  # back to what schema 3 stored
            conn.execute(
                "CREATE TABLE memdir_file_seen AS SELECT workspace_id, host, path, mtime_ns, "
                "size FROM memdir_copies"
            )
            conn.execute("DROP TABLE memdir_holders, memdir_copies")
            conn.execute("UPDATE memdir_schema SET version = 3")
            assert migrate(conn) == len(MIGRATIONS)
            assert conn.execute("SELECT min(mtime_ns) FROM memdir_copies").fetchone()[0] == -1
        with _host(root, url, "upgrade") as mem:
            report = mem.sync()
            assert report.embedded == report.updated == report.added == 0
            assert report.unchanged == report.scanned == 2  # re-read once, all kept
            assert mem.index.counts() == before
            assert _hit(mem, "backup bucket", "backup bucket").copy == ""
    finally:
        pg.conn.execute(f"DROP SCHEMA {schema} CASCADE")
