"""Embedding providers: the Embedder protocol, a registry, and local / remote / fake providers."""

from memdir.embeddings.base import Embedder, l2_normalize
from memdir.embeddings.fake import FakeEmbedder
from memdir.embeddings.registry import create_embedder, embedder_names, register_embedder

__all__ = [
    "Embedder",
    "FakeEmbedder",
    "create_embedder",
    "embedder_names",
    "l2_normalize",
    "register_embedder",
]
