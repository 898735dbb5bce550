"""numpy and sqlite-vec vector search return the same top-k."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memdir import FakeEmbedder
from memdir.config import IndexConfig
from memdir.config_choices import allowed_values
from memdir.errors import ConfigError
from memdir.index.manager import IndexManager, IndexSettings
from memdir.index.sqlite.vectors import (
    VECTOR_BACKENDS,
    NumpyVectorSearch,
    SqliteVecSearch,
    create_vector_search,
)
from memdir.workspace import Workspace
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


def _index(workspace: Path) -> IndexManager:
    rng = np.random.default_rng(7)
    for i in range(120):
        words = rng.choice(WORDS, size=12)
        write(workspace, f"memory/n{i}.md", " ".join(words) + "\n")
    mgr = IndexManager(Workspace(workspace), embedder=FakeEmbedder())
    mgr.sync()
    return mgr


def test_numpy_search_returns_exact_top_k(workspace: Path) -> None:
    mgr = _index(workspace)
    store = mgr.store()
    seqs, matrix = store.all_vectors()
    query = FakeEmbedder().embed_query("alpha beta gamma")
    hits = NumpyVectorSearch().search(store, query, 10)
    scores = matrix @ query
    expected = np.sort(scores)[::-1][:10]
    assert [sc for _, sc in hits] == pytest.approx(list(expected), abs=1e-6)
    for seq, sc in hits:  # each id really has the score it claims
        assert scores[list(seqs).index(seq)] == pytest.approx(sc, abs=1e-6)


def test_numpy_cache_sees_new_vectors(workspace: Path) -> None:
    mgr = _index(workspace)
    search = NumpyVectorSearch()
    query = FakeEmbedder().embed_query("brandnewword")
    assert all(s < 0.9 for _, s in search.search(mgr.store(), query, 3))
    write(workspace, "memory/new.md", "brandnewword\n")
    mgr.sync()
    assert search.search(mgr.store(), query, 1)[0][1] > 0.99


def test_unknown_backend_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="'faiss' is not one of: numpy, sqlite-vec"):
        IndexConfig(vector_backend="faiss")
    with pytest.raises(ConfigError, match="'faiss' is not one of: numpy, sqlite-vec"):
        IndexSettings(vector_backend="faiss")


def test_every_configurable_backend_exists() -> None:
    assert tuple(VECTOR_BACKENDS) == allowed_values("index.vector_backend")
    assert isinstance(create_vector_search("numpy", Path("unused")), NumpyVectorSearch)


def test_sqlite_vec_matches_numpy(workspace: Path) -> None:
    pytest.importorskip("sqlite_vec")
    mgr = _index(workspace)
    store = mgr.store()
    try:
        vec = SqliteVecSearch(mgr.path)
    except Exception as exc:  # pragma: no cover - depends on the SQLite build
        pytest.skip(f"sqlite-vec cannot load here: {exc}")
    numpy_search = NumpyVectorSearch()
    emb = FakeEmbedder()
    for text in ["alpha beta", "kappa lambda mu", "omicron", "zeta eta theta iota"]:
        query = emb.embed_query(text)
        a = numpy_search.search(store, query, 15)
        b = vec.search(store, query, 15)
        assert [round(s, 4) for _, s in a] == pytest.approx([round(s, 4) for _, s in b], abs=1e-4)
        # Ties may order differently; compare ids with equal scores as sets.
        assert {s for s, sc in a if sc > a[-1][1] + 1e-5} == {
            s for s, sc in b if sc > a[-1][1] + 1e-5
        }
    vec.close()
