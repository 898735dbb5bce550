"""The approximate vector index beside a big SQLite index (docs/design.md#vector-search):
used above the threshold, rescored exactly, kept in step with the chunks, rebuilt when its file
is lost, damaged or of another index, and exact search whenever it cannot be used."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memdir import FakeEmbedder
from memdir.index.manager import IndexManager
from memdir.index.sqlite import ann
from memdir.index.sqlite.ann import SIDECAR, AnnVectorSearch
from memdir.index.sqlite.ann_file import delta_path
from memdir.workspace import Workspace
from tests.helpers import write

WORDS = [f"w{i}" for i in range(300)]


@pytest.fixture
def faiss() -> object:
    return pytest.importorskip("faiss")


@pytest.fixture(autouse=True)
def always_ann(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every index here is "big": the threshold is 1 chunk."""
    monkeypatch.setenv("MEMDIR_ANN_OVER", "1")


def _index(workspace: Path, files: int = 400) -> IndexManager:
    rng = np.random.default_rng(11)
    for i in range(files):
        write(workspace, f"memory/n{i}.md", " ".join(rng.choice(WORDS, size=8)) + "\n")
    mgr = IndexManager(Workspace(workspace), embedder=FakeEmbedder())
    mgr.sync()
    return mgr


def _exact(mgr: IndexManager, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    seqs, matrix = mgr.store().all_vectors()
    scores = matrix @ query
    order = np.lexsort((seqs, -scores))[:k]
    return [(int(seqs[i]), float(scores[i])) for i in order]


def _same(a: list[tuple[int, float]], b: list[tuple[int, float]]) -> None:
    """The same scores, and the same chunks wherever the score tells them apart (not 0)."""
    assert [x for _, x in a] == pytest.approx([x for _, x in b], abs=1e-6)
    assert [s for s, x in a if x > 1e-6] == [s for s, x in b if x > 1e-6]


def _search(mgr: IndexManager) -> AnnVectorSearch:
    search = mgr.lifecycle.vectors()  # type: ignore[attr-defined]
    assert isinstance(search, AnnVectorSearch)
    return search


def test_shortlist_rescored_exactly_keeps_the_exact_top_k(
    workspace: Path, faiss: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ann, "SHORTLIST", 60)  # far below the 400 chunks: a real shortlist
    mgr = _index(workspace)
    recall = []
    for n in range(20):
        query = FakeEmbedder().embed_query(f"w{n} w{n + 40} w{n + 90}")
        hits = mgr.vector_search(query, 10)
        assert _search(mgr).last == "ann"
        truth = _exact(mgr, query, 10)
        recall.append(len({s for s, _ in hits} & {s for s, _ in truth}) / 10)
        exact_scores = dict(truth)
        for seq, score in hits:  # every score is the exact one of its chunk
            if seq in exact_scores:
                assert score == pytest.approx(exact_scores[seq], abs=1e-6)
    assert float(np.mean(recall)) >= 0.9
    assert (mgr.dir / SIDECAR).is_file()


def test_below_the_threshold_search_is_exact_and_writes_no_file(
    workspace: Path, faiss: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMDIR_ANN_OVER", "100000")
    mgr = _index(workspace, files=50)
    query = FakeEmbedder().embed_query("w1 w2")
    _same(mgr.vector_search(query, 5), _exact(mgr, query, 5))
    assert _search(mgr).last == "exact"
    assert not (mgr.dir / SIDECAR).exists()


def test_a_tiny_index_is_searched_exactly_whatever_the_threshold(
    workspace: Path, faiss: object
) -> None:
    mgr = _index(workspace, files=40)  # fewer vectors than a codebook has centroids
    query = FakeEmbedder().embed_query("w1 w2")
    _same(mgr.vector_search(query, 5), _exact(mgr, query, 5))
    assert _search(mgr).last == "exact"


def test_without_faiss_search_is_exact_and_status_says_how_to_install(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ann, "load_faiss", lambda: None)
    mgr = _index(workspace, files=300)
    query = FakeEmbedder().embed_query("w1 w2")
    _same(mgr.vector_search(query, 5), _exact(mgr, query, 5))
    assert _search(mgr).last == "exact"
    assert any("faiss-cpu" in note and "[ann]" in note for note in mgr.notes)


def test_an_edit_updates_the_index_in_place(
    workspace: Path, faiss: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    mgr = _index(workspace)
    mgr.vector_search(FakeEmbedder().embed_query("w1"), 5)
    search = _search(mgr)
    built = search._index
    write(workspace, "memory/n3.md", "brandnewword w7\n")
    mgr.sync()

    def no_build(*args: object) -> None:
        raise AssertionError("an edit must not rebuild the index")

    store = mgr.store()
    links = store.vector_links()
    monkeypatch.setattr(AnnVectorSearch, "_build", no_build)
    # The sync's own record of what it changed is enough: no read of every chunk's link.
    monkeypatch.setattr(store, "vector_links", no_build)
    hits = mgr.vector_search(FakeEmbedder().embed_query("brandnewword"), 3)
    assert search._index is built  # updated, not replaced
    assert search.last == "ann"
    top = store.chunks_by_seq([hits[0][0]])[hits[0][0]]
    assert "brandnewword" in top.text
    # The old chunks of n3.md are gone from the index, not only filtered out.
    assert search._index.ntotal == store.counter("vectors")
    assert search._seqs.tolist() == links[0].tolist()
    assert search._ids.tolist() == links[1].tolist()


def test_a_write_by_another_connection_is_found_by_comparing_every_link(
    workspace: Path, faiss: object
) -> None:
    mgr = _index(workspace)
    mgr.vector_search(FakeEmbedder().embed_query("w1"), 5)
    other = IndexManager(Workspace(workspace), embedder=FakeEmbedder())
    write(workspace, "memory/n5.md", "brandnewword\n")
    other.sync()
    hits = mgr.vector_search(FakeEmbedder().embed_query("brandnewword"), 1)
    assert _search(mgr).last == "ann"
    assert "brandnewword" in mgr.store().chunks_by_seq([hits[0][0]])[hits[0][0]].text
    seqs, _ = mgr.store().vector_links()
    assert _search(mgr)._seqs.tolist() == seqs.tolist()
    assert _search(mgr)._index.ntotal == len(seqs)


def test_a_new_process_applies_what_the_file_lacks(
    workspace: Path, faiss: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    mgr = _index(workspace)
    mgr.vector_search(FakeEmbedder().embed_query("w1"), 5)
    mgr.close()
    write(workspace, "memory/fresh.md", "brandnewword\n")
    again = IndexManager(Workspace(workspace), embedder=FakeEmbedder())
    again.sync()
    monkeypatch.setattr(AnnVectorSearch, "_build", lambda *a: pytest.fail("rebuilt"))
    hits = again.vector_search(FakeEmbedder().embed_query("brandnewword"), 1)
    assert _search(again).last == "ann"
    assert "brandnewword" in again.store().chunks_by_seq([hits[0][0]])[hits[0][0]].text


@pytest.mark.parametrize("damage", ["deleted", "garbage", "truncated", "other index"])
def test_a_lost_or_damaged_file_is_rebuilt_never_trusted(
    workspace: Path, faiss: object, damage: str
) -> None:
    mgr = _index(workspace)
    query = FakeEmbedder().embed_query("w5 w6 w7")
    first = mgr.vector_search(query, 8)
    mgr.close()
    sidecar = mgr.dir / SIDECAR
    if damage == "deleted":
        sidecar.unlink()
    elif damage == "garbage":
        sidecar.write_bytes(b"not an index at all" * 100)
    elif damage == "truncated":
        sidecar.write_bytes(sidecar.read_bytes()[: sidecar.stat().st_size // 2])
    else:  # a file of another SQLite index: its inode differs
        data = dict(np.load(sidecar))
        header = bytes(data["header"]).decode().replace('"inode": ', '"inode": 1')
        data["header"] = np.frombuffer(header.encode(), dtype=np.uint8)
        with open(sidecar, "wb") as fh:
            np.savez(fh, **data)
    again = IndexManager(Workspace(workspace), embedder=FakeEmbedder())
    _same(again.vector_search(query, 8), first)
    assert _search(again).last == "ann"
    if damage != "deleted":
        assert any(SIDECAR in note for note in again.notes)
    assert np.load(sidecar)["seqs"].size == again.store().counter("vectors")


def test_the_watchers_warm_writes_a_small_delta_a_new_process_reads_without_comparing(
    workspace: Path, faiss: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    mgr = _index(workspace)
    mgr.warm()  # builds and writes the base
    base = (mgr.dir / SIDECAR).read_bytes()
    write(workspace, "memory/n8.md", "brandnewword w3\n")
    mgr.sync()
    mgr.warm()  # as the MCP server's watcher after its sync
    assert (mgr.dir / SIDECAR).read_bytes() == base  # the big file is not written again
    assert delta_path(mgr.dir / SIDECAR).is_file()
    mgr.close()

    again = IndexManager(Workspace(workspace), embedder=FakeEmbedder())
    store = again.store()
    monkeypatch.setattr(store, "vector_links", lambda: pytest.fail("compared every link"))
    monkeypatch.setattr(AnnVectorSearch, "_build", lambda *a: pytest.fail("rebuilt"))
    hits = again.vector_search(FakeEmbedder().embed_query("brandnewword"), 1)
    assert _search(again).last == "ann"
    assert "brandnewword" in store.chunks_by_seq([hits[0][0]])[hits[0][0]].text
    monkeypatch.undo()
    seqs, _ = store.vector_links()
    assert _search(again)._seqs.tolist() == seqs.tolist()


def test_a_delta_of_another_base_or_behind_the_index_is_not_trusted(
    workspace: Path, faiss: object
) -> None:
    mgr = _index(workspace)
    mgr.warm()
    write(workspace, "memory/n8.md", "brandnewword w3\n")
    mgr.sync()
    mgr.warm()
    delta = delta_path(mgr.dir / SIDECAR).read_bytes()
    write(workspace, "memory/n9.md", "otherfreshword\n")
    mgr.sync()  # not warmed: the files are behind this write
    mgr.close()
    delta_path(mgr.dir / SIDECAR).write_bytes(delta[: len(delta) // 2])  # and damaged
    again = IndexManager(Workspace(workspace), embedder=FakeEmbedder())
    for word in ("brandnewword", "otherfreshword"):
        hits = again.vector_search(FakeEmbedder().embed_query(word), 1)
        assert word in again.store().chunks_by_seq([hits[0][0]])[hits[0][0]].text
    seqs, _ = again.store().vector_links()
    assert _search(again)._seqs.tolist() == seqs.tolist()
    assert _search(again)._index.ntotal == len(seqs)
