"""The approximate vector index beside a big SQLite index (docs/design.md#vector-search):
used above the threshold, rescored exactly, kept in step with the chunks, rebuilt when its file
is lost, damaged or of another index, and exact search whenever it cannot be used."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memdir import FakeEmbedder
from memdir.index.manager import IndexManager
from memdir.index.sqlite import ann
from memdir.index.sqlite.ann import SIDECAR, AnnVectorSearch
from memdir.index.sqlite.ann_file import MAGIC, Base, delta_path, read_base, write_base
from memdir.workspace.layout import Workspace
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


def _assert_in_step(mgr: IndexManager) -> None:
    """The approximate index holds exactly the chunks that have a vector now."""
    seqs, _ = mgr.store().vector_links()
    assert _search(mgr)._seqs.tolist() == seqs.tolist()
    assert _search(mgr)._index.ntotal == len(seqs)


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
    _assert_in_step(mgr)


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


def _rows(sidecar: Path) -> int:
    base = read_base(sidecar)
    base.verify()
    return len(base.seqs)


def _rewrite(sidecar: Path, faiss: object, **header: object) -> None:
    """Write the base again, its header changed."""
    base = read_base(sidecar)
    index = np.array(base.index)
    code_size = faiss.deserialize_index(index).code_size  # type: ignore[attr-defined]
    changed = Base({**base.header, **header}, base.state, index, base.seqs, base.ids)
    write_base(sidecar, changed, code_size)


def _flip(sidecar: Path, at: int) -> None:
    data = bytearray(sidecar.read_bytes())
    data[at] ^= 0xFF
    sidecar.write_bytes(bytes(data))


DAMAGES = ["deleted", "garbage", "truncated", "other index", "old format", "meta", "head"]


@pytest.mark.parametrize("damage", DAMAGES)
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
    elif damage == "other index":  # a file of another SQLite index: its inode differs
        _rewrite(sidecar, faiss, inode=1)
    elif damage == "old format":  # the zip of the first layout, whole
        base = read_base(sidecar)  # (copied out of the map before the file is truncated)
        arrays = {"index": np.array(base.index), "seqs": np.array(base.seqs)}
        with open(sidecar, "wb") as fh:
            np.savez(fh, **arrays)
    elif damage == "meta":
        _flip(sidecar, len(MAGIC) + 20)
    else:  # a byte of the faiss index's head (its quantiser, codebooks, lists' sizes)
        _flip(sidecar, sidecar.read_bytes().index(b"IwPQ") + 200)
    again = IndexManager(Workspace(workspace), embedder=FakeEmbedder())
    _same(again.vector_search(query, 8), first)
    assert _search(again).last == "ann"
    if damage != "deleted":
        assert any(SIDECAR in note for note in again.notes)
    assert _rows(sidecar) == again.store().counter("vectors")


def test_damage_in_the_lists_costs_no_exact_score_and_warm_rebuilds_the_file(
    workspace: Path, faiss: object
) -> None:
    """Only the head of the faiss index is checked at a read (the whole file would cost 60–160 ms
    at 1.8 million vectors): a damaged code or id can cost recall, never a wrong result, and
    the server's warm checks the whole file and rebuilds it."""
    mgr = _index(workspace)
    query = FakeEmbedder().embed_query("w5 w6 w7")
    first = mgr.vector_search(query, 8)
    mgr.close()
    sidecar = mgr.dir / SIDECAR
    data = sidecar.read_bytes()
    length = int.from_bytes(data[len(MAGIC) : len(MAGIC) + 8], "little")
    meta = json.loads(data[len(MAGIC) + 12 : len(MAGIC) + 12 + length])
    end = -(-(len(MAGIC) + 12 + length) // 64) * 64 + meta["index_bytes"]  # the index's end
    lists = end - meta["rows"] * (meta["code_size"] + 8)
    for at in (lists + 5, end - 3, len(data) - 3):  # a code, a list's last id, a vector id
        _flip(sidecar, at)
    again = IndexManager(Workspace(workspace), embedder=FakeEmbedder())
    exact = dict(_exact(again, query, 10**6))
    hits = again.vector_search(query, 8)  # a vector's id lost: it may be missing, no more
    assert len({s for s, _ in hits} & {s for s, _ in first}) >= 6
    assert all(score == pytest.approx(exact[seq], abs=1e-6) for seq, score in hits)
    assert not any(SIDECAR in note for note in again.notes)
    again.warm()
    assert any("could not be read" in note for note in again.notes)
    assert _rows(sidecar) == again.store().counter("vectors")  # rebuilt whole
    _same(again.vector_search(query, 8), first)
    assert _search(again)._index.mapped is None  # type: ignore[union-attr]


def test_a_new_process_maps_the_file_gives_the_same_results_and_takes_edits(
    workspace: Path, faiss: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    mgr = _index(workspace)
    mgr.warm()
    queries = [FakeEmbedder().embed_query(f"w{n} w{n + 40}") for n in range(10)]
    before = [mgr.vector_search(q, 8) for q in queries]
    mgr.close()

    again = IndexManager(Workspace(workspace), embedder=FakeEmbedder())
    with monkeypatch.context() as patch:
        patch.setattr(AnnVectorSearch, "_build", lambda *a: pytest.fail("rebuilt"))
        for q, hits in zip(queries, before, strict=True):
            _same(again.vector_search(q, 8), hits)
    layered = _search(again)._index
    assert layered is not None and layered.mapped is not None  # read as a map, not copied
    assert not _search(again)._seqs.flags.writeable

    # Edits change no map: the added vectors and removed seqs are kept beside it.
    write(workspace, "memory/n3.md", "brandnewword w1\n")
    (workspace / "memory" / "n4.md").unlink()
    again.sync()
    for q in queries:
        _same(again.vector_search(q, 8), _exact(again, q, 8))
    hits = again.vector_search(FakeEmbedder().embed_query("brandnewword"), 1)
    assert "brandnewword" in again.store().chunks_by_seq([hits[0][0]])[hits[0][0]].text
    assert layered.mapped is not None and layered.removed and layered.added_seqs
    seqs, _ = again.store().vector_links()
    assert layered.ntotal == len(seqs) and _search(again)._seqs.tolist() == seqs.tolist()
    write(workspace, "memory/n3.md", "otherfreshword w2\n")  # an added vector removed again
    again.sync()
    seqs, _ = again.store().vector_links()
    again.vector_search(queries[0], 8)
    assert layered.ntotal == len(seqs)

    # A new base is written from a copy in memory; a third process maps it.
    monkeypatch.setattr(ann, "REWRITE_AFTER", 1)
    monkeypatch.setattr(ann, "REWRITE_SHARE", 0.0)
    again.warm()
    assert layered.mapped is None and layered.ntotal == len(seqs)
    assert _rows(mgr.dir / SIDECAR) == len(seqs)
    again.close()
    third = IndexManager(Workspace(workspace), embedder=FakeEmbedder())
    for q in queries:
        _same(third.vector_search(q, 8), _exact(third, q, 8))
    assert _search(third)._index.mapped is not None  # type: ignore[union-attr]


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
    _assert_in_step(again)


def test_a_faiss_that_cannot_map_reads_a_copy(
    workspace: Path, faiss: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ``ann`` extra allows faiss versions without ``ZeroCopyIOReader``."""
    mgr = _index(workspace)
    mgr.warm()
    query = FakeEmbedder().embed_query("w5 w6 w7")
    first = mgr.vector_search(query, 8)
    mgr.close()
    monkeypatch.delattr(faiss, "ZeroCopyIOReader")
    again = IndexManager(Workspace(workspace), embedder=FakeEmbedder())
    _same(again.vector_search(query, 8), first)
    assert _search(again)._index.mapped is None  # type: ignore[union-attr]
    write(workspace, "memory/n3.md", "brandnewword w1\n")
    again.sync()
    hits = again.vector_search(FakeEmbedder().embed_query("brandnewword"), 1)
    assert "brandnewword" in again.store().chunks_by_seq([hits[0][0]])[hits[0][0]].text
