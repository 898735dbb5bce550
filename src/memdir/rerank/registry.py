"""Choose a reranker by ``[rerank] provider``; no if/elif chains.

Each factory takes the whole :class:`~memdir.config.settings.Config` (the ``llm`` reranker needs
``[llm]``) and returns a :class:`~memdir.rerank.base.Reranker`, or None for ``none``. A provider
that cannot be used raises :class:`~memdir.errors.ProviderUnavailable` saying what to do.
"""

from __future__ import annotations

from collections.abc import Callable

from memdir.config.choices import register_choice
from memdir.config.settings import Config, resolve_api_key
from memdir.errors import ProviderUnavailable
from memdir.registry import ProviderRegistry
from memdir.rerank.base import Reranker

Factory = Callable[[Config], Reranker | None]


def _learned(config: Config) -> Reranker:
    from memdir.rerank.learned import LearnedReranker

    return LearnedReranker()


def _http(config: Config) -> Reranker:
    from memdir.rerank.http import HTTPReranker

    cfg = config.rerank
    return HTTPReranker(
        cfg.base_url or None,
        cfg.model or None,
        resolve_api_key(cfg.api_key, what="rerank.api_key") or None,
        api=cfg.api,
        timeout=cfg.timeout,
        max_retries=cfg.max_retries,
    )


def _llm(config: Config) -> Reranker:
    from memdir.llm.registry import create_llm
    from memdir.rerank.llm import LLMReranker

    llm = create_llm(config.llm)
    if llm is None:
        raise ProviderUnavailable(
            'rerank.provider = "llm" needs a language model: set [llm] provider in your config'
        )
    return LLMReranker(llm, timeout=config.rerank.timeout)


def _load_builtins() -> None:
    register_reranker("none", lambda cfg: None)
    register_reranker("learned", _learned)
    register_reranker("http", _http)
    register_reranker("llm", _llm)


_REGISTRY: ProviderRegistry[Config, Reranker] = ProviderRegistry("reranker", _load_builtins)


def register_reranker(name: str, factory: Factory) -> None:
    """Make ``factory`` available as ``rerank.provider = name``."""
    register_choice("rerank.provider", name)
    _REGISTRY.register(name, factory)


def reranker_names() -> list[str]:
    """The registered reranker names, sorted."""
    return _REGISTRY.names()


def create_reranker(config: Config) -> Reranker | None:
    """Build the reranker ``config.rerank.provider`` names; None means no rerank stage.

    Raises:
        ConfigError: the name is unknown, or ``api_key`` is a literal secret.
        ProviderUnavailable: the reranker cannot run here (no endpoint, no LLM).
    """
    return _REGISTRY.create(config.rerank.provider, config)


__all__ = ["create_reranker", "register_reranker", "reranker_names"]
