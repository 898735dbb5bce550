"""``[index] approximate_over``: the size from which SQLite's vector search goes through the
approximate index (docs/design.md#vector-search), and ``MEMDIR_ANN_OVER`` over it."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdir import FakeEmbedder
from memdir.config.settings import ConfigError, IndexConfig, load_config
from memdir.index.manager import IndexManager, IndexSettings
from memdir.index.sqlite.ann import AnnVectorSearch
from memdir.workspace.layout import Workspace
from tests.helpers import write


def _search_used(workspace: Path, over: int) -> str:
    for i in range(300):
        write(workspace, f"memory/n{i}.md", f"note {i} about w{i % 17} and w{i % 29}\n")
    mgr = IndexManager(
        Workspace(workspace), embedder=FakeEmbedder(), settings=IndexSettings(approximate_over=over)
    )
    try:
        mgr.sync()
        mgr.vector_search(FakeEmbedder().embed_query("w3 w5"), 5)
        search = mgr.lifecycle.vectors()  # type: ignore[attr-defined]
        assert isinstance(search, AnnVectorSearch)
        return search.last
    finally:
        mgr.close()


def test_the_config_key_sets_the_threshold(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("faiss")
    monkeypatch.delenv("MEMDIR_ANN_OVER", raising=False)
    assert _search_used(workspace, over=1) == "ann"
    assert _search_used(workspace, over=10_000) == "exact"
    monkeypatch.setenv("MEMDIR_ANN_OVER", "1")  # the variable wins, for benchmarks
    assert _search_used(workspace, over=10_000) == "ann"


def test_the_config_key_is_read_and_checked(workspace: Path) -> None:
    (workspace / ".memdir").mkdir(exist_ok=True)
    (workspace / ".memdir" / "config.toml").write_text("[index]\napproximate_over = 200000\n")
    config = load_config(workspace)
    assert config.index.approximate_over == 200_000
    assert IndexSettings.from_config(config).approximate_over == 200_000
    with pytest.raises(ConfigError, match="approximate_over"):
        IndexConfig(approximate_over=-1)
