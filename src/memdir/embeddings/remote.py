"""Registry factories for the remote embedding providers: ``openai``, ``ollama``, ``gemini``.

Each factory turns an :class:`~memdir.config.settings.EmbeddingConfig` into an embedder. Empty
config fields fall back to each provider's defaults and environment variables (see
:mod:`memdir.embeddings.openai`, :mod:`~memdir.embeddings.ollama`,
:mod:`~memdir.embeddings.gemini`). ``api_key`` is an ``env:VAR`` reference; a variable that is
not set makes the provider unavailable (so the caller can fall back to keyword search) rather
than a config error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memdir.config.settings import EmbeddingConfig, resolve_api_key
from memdir.embeddings.base import Embedder

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
        _api_key(config),
        **_http_options(config),
    )


def ollama_from_config(config: EmbeddingConfig) -> Embedder:
    """Build an :class:`~memdir.embeddings.ollama.OllamaEmbedder` from ``config``."""
    from memdir.embeddings.ollama import OllamaEmbedder

    return OllamaEmbedder(
        config.base_url or None,
        config.model or None,
        **_http_options(config),
    )


def gemini_from_config(config: EmbeddingConfig) -> Embedder:
    """Build a :class:`~memdir.embeddings.gemini.GeminiEmbedder` from ``config``."""
    from memdir.embeddings.gemini import GeminiEmbedder

    return GeminiEmbedder(
        config.base_url or None,
        config.model or None,
        _api_key(config),
        **_http_options(config),
    )


def _api_key(config: EmbeddingConfig) -> str | None:
    """The resolved ``api_key`` (None when not set: the provider's environment variable)."""
    return resolve_api_key(config.api_key, what="embedding.api_key") or None


def _http_options(config: EmbeddingConfig) -> dict[str, Any]:
    """The request settings every remote embedder takes."""
    return {
        "batch_tokens": config.batch_tokens,
        "timeout": config.timeout,
        "max_retries": config.max_retries,
    }
