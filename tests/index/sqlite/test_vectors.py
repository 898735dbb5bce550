"""Vector search of the SQLite index: exact over the stored vectors, and the compact vector
format it reads (docs/design.md#vector-search)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memdir import FakeEmbedder
from memdir.config.choices import allowed_values
from memdir.config.settings import IndexConfig
from memdir.errors import ConfigError
from memdir.index.manager import IndexManager, IndexSettings
from memdir.index.sqlite import codec, embeddings
from memdir.index.sqlite.codec import FLOAT16, INT8, decode, encode
from memdir.index.sqlite.vectors import (
    VECTOR_BACKENDS,
    NumpyVectorSearch,
    create_vector_search,
)
from memdir.workspace.layout import Workspace
from tests.helpers import write

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "omicron",
]


def _index(workspace: Path, files: int = 120) -> IndexManager:
    rng = np.random.default_rng(7)
    for i in range(files):
        words = rng.choice(WORDS, size=12)
        write(workspace, f"memory/n{i}.md", " ".join(words) + "\n")
    mgr = IndexManager(Workspace(workspace), embedder=FakeEmbedder())
    mgr.sync()
    return mgr


def _same(a: list[tuple[int, float]], b: list[tuple[int, float]]) -> None:
    assert [seq for seq, _ in a] == [seq for seq, _ in b]
    assert [score for _, score in a] == pytest.approx([score for _, score in b], abs=1e-6)


def _exact(mgr: IndexManager, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    seqs, matrix = mgr.store().all_vectors()
    scores = matrix @ query
    order = np.lexsort((seqs, -scores))[:k]
    return [(int(seqs[i]), float(scores[i])) for i in order]


def test_small_index_is_searched_exactly(workspace: Path) -> None:
    mgr = _index(workspace)
    query = FakeEmbedder().embed_query("alpha beta gamma")
    hits = NumpyVectorSearch().search(mgr.store(), query, 10)
    _same(hits, _exact(mgr, query, 10))


def test_search_sees_new_and_deleted_vectors(workspace: Path) -> None:
    mgr = _index(workspace)
    search = NumpyVectorSearch()
    query = FakeEmbedder().embed_query("brandnewword")
    assert all(s < 0.9 for _, s in search.search(mgr.store(), query, 3))
    write(workspace, "memory/new.md", "brandnewword\n")
    mgr.sync()
    best = search.search(mgr.store(), query, 1)[0]
    assert best[1] > 0.99
    (workspace / "memory" / "new.md").unlink()
    mgr.sync()
    assert all(seq != best[0] for seq, _ in search.search(mgr.store(), query, 5))


def test_float16_until_the_model_has_a_centre_then_int8() -> None:
    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((50, 384)).astype(np.float32) + 0.5  # a common component
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    plain = encode(vecs, None)
    assert all(b[0] == FLOAT16 and len(b) == 1 + 2 * 384 for b in plain)
    centre = vecs.mean(axis=0)
    packed = encode(vecs, centre)
    assert all(b[0] == INT8 and len(b) == 5 + 384 for b in packed)
    for blobs, tol in ((plain, 1e-3), (packed, 1e-2)):
        back = decode(blobs, 384, centre)
        assert np.allclose(np.linalg.norm(back, axis=1), 1.0, atol=1e-5)
        assert np.max(np.abs(np.sum(back * vecs, axis=1) - 1.0)) < tol


def test_decode_never_raises_on_a_damaged_blob() -> None:
    back = decode([b"", b"\x02short", b"\x09" * 20], 4, np.zeros(4, np.float32))
    assert back.shape == (3, 4) and not back.any()


def test_unknown_backend_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="'faiss' is not one of: numpy, sqlite-vec"):
        IndexConfig(vector_backend="faiss")
    with pytest.raises(ConfigError, match="'faiss' is not one of: numpy, sqlite-vec"):
        IndexSettings(vector_backend="faiss")


def test_every_configurable_backend_exists() -> None:
    assert tuple(VECTOR_BACKENDS) == allowed_values("index.vector_backend")
    assert isinstance(create_vector_search("numpy", Path("unused")), NumpyVectorSearch)


def test_sqlite_vec_is_an_old_name_for_the_same_search(workspace: Path) -> None:
    mgr = IndexManager(
        Workspace(_index(workspace).workspace.root),
        embedder=FakeEmbedder(),
        settings=IndexSettings(vector_backend="sqlite-vec"),
    )
    query = FakeEmbedder().embed_query("alpha beta")
    _same(mgr.vector_search(query, 5), _exact(mgr, query, 5))
    assert any("sqlite-vec is no longer used" in note for note in mgr.notes)


def test_after_an_edit_only_the_changed_vectors_are_decoded(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mgr = _index(workspace)
    store = mgr.store()
    search = NumpyVectorSearch()
    query = FakeEmbedder().embed_query("alpha beta gamma")
    search.search(store, query, 10)
    decoded: list[int] = []
    real = type(store).vectors_by_id

    def counting(self, ids):  # type: ignore[no-untyped-def]
        decoded.append(len(ids))
        return real(self, ids)

    monkeypatch.setattr(type(store), "vectors_by_id", counting)
    write(workspace, "memory/n3.md", "omicron xi nu mu lambda alpha beta gamma\n")  # edit
    (workspace / "memory" / "n7.md").unlink()  # delete
    write(workspace, "memory/new.md", "alpha beta gamma delta\n")  # add
    mgr.sync()
    hits = search.search(store, query, 10)
    _same(hits, _exact(mgr, query, 10))
    assert decoded == [2]  # the edited and the new chunk, not all 120
    assert len(search._seqs) == mgr.counts()["vectors"]
    # a fresh search object (a new process) loads everything and agrees
    _same(NumpyVectorSearch().search(store, query, 10), hits)


def test_all_int8_rows_decode_in_one_step_as_the_general_path_does() -> None:
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(50, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    centre = vectors.mean(axis=0)
    blobs = encode(vectors, centre)
    fast = decode(blobs, 16, centre)  # every row int8: the one-step path
    mixed = decode([*blobs, *encode(vectors[:1], None)], 16, centre)  # the general path
    assert fast.dtype == np.float32
    np.testing.assert_allclose(fast, mixed[:50], atol=1e-6)
    np.testing.assert_allclose(mixed[50], vectors[0], atol=1e-3)


def test_a_long_list_is_decoded_block_by_block_as_row_by_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(40, 16)).astype(np.float32) + 0.3
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    centre = vectors.mean(axis=0)
    blobs = [*encode(vectors[:20], None), *encode(vectors[20:], centre), b"\x02short", b""]
    order = rng.permutation(len(blobs))  # float16, int8 and damaged rows mixed in every block
    mixed = [blobs[i] for i in order]
    monkeypatch.setattr(codec, "BLOCK", 7)
    whole = decode(mixed, 16, centre)
    one_by_one = np.vstack([decode([blob], 16, centre) for blob in mixed])
    np.testing.assert_array_equal(whole, one_by_one)
    assert whole.shape == (42, 16) and int((np.abs(whole).sum(axis=1) == 0).sum()) == 2


def test_many_ids_are_read_in_one_scan_and_agree_with_the_lookups(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _index(workspace).store()
    _, ids = store.vector_links()
    wanted = np.concatenate([ids[::-1], [10**9], ids[:3]])  # backwards, one gone, repeats
    looked_up = store.vectors_by_id(wanted)  # under SCAN_OVER: the ids in batches
    monkeypatch.setattr(embeddings, "SCAN_OVER", 3)
    scanned = store.vectors_by_id(wanted)  # the whole table, picked by id
    np.testing.assert_array_equal(scanned, looked_up)
    assert not scanned[len(ids)].any()
    assert np.allclose(np.linalg.norm(np.delete(scanned, len(ids), axis=0), axis=1), 1.0)
