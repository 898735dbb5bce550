"""Registry factories for the remote embedding providers: ``openai``, ``ollama``, ``gemini``.

Each factory turns an :class:`~memdir.config.EmbeddingConfig` into an embedder. Empty config
fields fall back to each provider's defaults and environment variables (see
:mod:`memdir.embeddings.openai`, :mod:`~memdir.embeddings.ollama`,
:mod:`~memdir.embeddings.gemini`). ``api_key`` is an ``env:VAR`` reference; a variable that is
not set makes the provider unavailable (so the caller can fall back to keyword search) rather
than a config error.
"""

from __future__ import annotations

from collections.abc import Callable

from memdir.config import EmbeddingConfig, resolve_secret
from memdir.embeddings.base import Embedder
from memdir.errors import ConfigError, ProviderUnavailable

Register = Callable[[str, Callable[[EmbeddingConfig], Embedder | None]], None]


def register_all(register: Register) -> None:
    """Register the remote providers with the registry."""
    register("openai", openai_from_config)
    register("ollama", ollama_from_config)
    register("gemini", gemini_from_config)


def openai_from_config(config: EmbeddingConfig) -> Embedder:
    """Build an :class:`~memdir.embeddings.openai.OpenAIEmbedder` from ``config``."""
    from memdir.embeddings.openai import OpenAIEmbedder

    return OpenAIEmbedder(
        config.base_url or None,
        config.model or None,
        _api_key(config) or None,
        batch_tokens=config.batch_tokens,
        timeout=config.timeout,
        max_retries=config.max_retries,
    )


def ollama_from_config(config: EmbeddingConfig) -> Embedder:
    """Build an :class:`~memdir.embeddings.ollama.OllamaEmbedder` from ``config``."""
    from memdir.embeddings.ollama import OllamaEmbedder

    return OllamaEmbedder(
        config.base_url or None,
        config.model or None,
        batch_tokens=config.batch_tokens,
        timeout=config.timeout,
        max_retries=config.max_retries,
    )


def gemini_from_config(config: EmbeddingConfig) -> Embedder:
    """Build a :class:`~memdir.embeddings.gemini.GeminiEmbedder` from ``config``."""
    from memdir.embeddings.gemini import GeminiEmbedder

    return GeminiEmbedder(
        config.base_url or None,
        config.model or None,
        _api_key(config) or None,
        batch_tokens=config.batch_tokens,
        timeout=config.timeout,
        max_retries=config.max_retries,
    )


def _api_key(config: EmbeddingConfig) -> str:
    """Resolve ``config.api_key``; an unset variable makes the provider unavailable.

    Raises:
        ConfigError: ``api_key`` is a literal secret instead of an ``env:VAR`` reference.
        ProviderUnavailable: the referenced variable is not set.
    """
    try:
        return resolve_secret(config.api_key, what="embedding.api_key")
    except ConfigError as exc:
        if not config.api_key.startswith("env:"):
            raise
        raise ProviderUnavailable(
            f"{exc}: export {config.api_key[4:]}=… or change embedding.api_key"
        ) from exc
