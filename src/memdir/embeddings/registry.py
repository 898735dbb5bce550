"""Choose an embedder by provider name (docs/design.md#embeddings); no if/elif chains.

Each factory takes the :class:`~memdir.config.settings.EmbeddingConfig` and returns an
:class:`~memdir.embeddings.base.Embedder`, or None for keyword-only (``none``). A provider that
cannot be used raises :class:`~memdir.errors.ProviderUnavailable` with what to do.
"""

from __future__ import annotations

from collections.abc import Callable

from memdir.config.choices import register_choice
from memdir.config.settings import EmbeddingConfig
from memdir.embeddings.base import Embedder
from memdir.registry import ProviderRegistry

Factory = Callable[[EmbeddingConfig], Embedder | None]


def _load_builtins() -> None:
    from memdir.embeddings import remote
    from memdir.embeddings.fake import FakeEmbedder
    from memdir.embeddings.local import LocalEmbedder

    register_embedder("none", lambda cfg: None)
    register_embedder("fake", lambda cfg: FakeEmbedder(int(cfg.model) if cfg.model else 64))
    register_embedder(
        "local",
        lambda cfg: LocalEmbedder(
            cfg.model, query_threads=cfg.query_threads, document_threads=cfg.document_threads
        ),
    )
    remote.register_all(register_embedder)


_REGISTRY: ProviderRegistry[EmbeddingConfig, Embedder] = ProviderRegistry(
    "embedding provider", _load_builtins
)


def register_embedder(name: str, factory: Factory) -> None:
    """Make ``factory`` available as ``embedding.provider = name`` (configs may name it from
    now on)."""
    register_choice("embedding.provider", name)
    _REGISTRY.register(name, factory)


def embedder_names() -> list[str]:
    """The registered provider names, sorted."""
    return _REGISTRY.names()


def create_embedder(config: EmbeddingConfig) -> Embedder | None:
    """Build the embedder ``config`` names; None means keyword-only.

    Raises:
        ConfigError: the provider name is unknown.
        ProviderUnavailable: the provider cannot run here (missing package, key, model).
    """
    return _REGISTRY.create(config.provider, config)
