"""Choose an embedder by provider name (SPEC §4); no if/elif chains.

Each factory takes the :class:`~memdir.config.EmbeddingConfig` and returns an
:class:`~memdir.embeddings.base.Embedder`, or None for keyword-only (``none``). A provider that
cannot be used raises :class:`~memdir.errors.ProviderUnavailable` with what to do.
"""

from __future__ import annotations

from collections.abc import Callable

from memdir.config import EmbeddingConfig
from memdir.embeddings.base import Embedder
from memdir.errors import ConfigError

Factory = Callable[[EmbeddingConfig], Embedder | None]

_REGISTRY: dict[str, Factory] = {}


def register_embedder(name: str, factory: Factory) -> None:
    """Make ``factory`` available as ``embedding.provider = name``."""
    _REGISTRY[name] = factory


def embedder_names() -> list[str]:
    """The registered provider names, sorted."""
    _load_builtins()
    return sorted(_REGISTRY)


def create_embedder(config: EmbeddingConfig) -> Embedder | None:
    """Build the embedder ``config`` names; None means keyword-only.

    Raises:
        ConfigError: the provider name is unknown.
        ProviderUnavailable: the provider cannot run here (missing package, key, model).
    """
    _load_builtins()
    factory = _REGISTRY.get(config.provider)
    if factory is None:
        raise ConfigError(
            f"unknown embedding provider {config.provider!r}: choose one of "
            f"{', '.join(sorted(_REGISTRY))}"
        )
    return factory(config)


_loaded = False


def _load_builtins() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    from memdir.embeddings import remote
    from memdir.embeddings.fake import FakeEmbedder
    from memdir.embeddings.local import LocalEmbedder

    register_embedder("none", lambda cfg: None)
    register_embedder("fake", lambda cfg: FakeEmbedder(int(cfg.model) if cfg.model else 64))
    register_embedder("local", lambda cfg: LocalEmbedder(cfg.model))
    remote.register_all(register_embedder)
