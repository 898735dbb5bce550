"""Choose an LLM by provider name (docs/design.md#interfaces); no if/elif chains.

Each factory takes the :class:`~memdir.config.settings.LLMConfig` and returns an
:class:`~memdir.llm.base.LLM`, or None when LLM features are off (``none``). A provider that
cannot be used raises :class:`~memdir.errors.ProviderUnavailable` saying what to do.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace

from memdir.config.choices import register_choice
from memdir.config.settings import Config, LLMConfig, resolve_api_key
from memdir.llm.base import API_KEY_ENV, BASE_URL_ENV, LLM, MODEL_ENV
from memdir.registry import ProviderRegistry

Factory = Callable[[LLMConfig], LLM | None]


def _load_builtins() -> None:
    register_llm("none", lambda cfg: None)
    register_llm("fake", fake_from_config)
    register_llm("openai", openai_from_config)
    register_llm("anthropic", anthropic_from_config)


_REGISTRY: ProviderRegistry[LLMConfig, LLM] = ProviderRegistry("llm provider", _load_builtins)


def register_llm(name: str, factory: Factory) -> None:
    """Make ``factory`` available as ``llm.provider = name`` (configs may name it from now
    on)."""
    register_choice("llm.provider", name)
    _REGISTRY.register(name, factory)


def llm_names() -> list[str]:
    """The registered provider names, sorted."""
    return _REGISTRY.names()


def create_llm(config: LLMConfig) -> LLM | None:
    """Build the LLM ``config`` names; None means no LLM (``provider = "none"``).

    Raises:
        ConfigError: the provider name is unknown, or ``api_key`` is a literal secret.
        ProviderUnavailable: the provider cannot run here (missing package, key, model).
    """
    return _REGISTRY.create(config.provider, config)


@dataclass(frozen=True)
class LLMChoice:
    """The LLM settings a command will use, and where the provider came from."""

    settings: LLMConfig
    #: ``default``, ``<config file> [llm] provider``, ``arguments``, or the environment
    #: variables that switched ``provider = "none"`` to an OpenAI-compatible endpoint.
    source: str

    def to_dict(self) -> dict[str, str]:
        return {
            "provider": self.settings.provider,
            "model": self.settings.model,
            "source": self.source,
        }


def chat_llm_choice(config: Config) -> LLMChoice:
    """The chat model's settings: ``[llm]`` from the config, or — only while it says
    ``provider = "none"`` — an OpenAI-compatible endpoint named by ``MEMDIR_LLM_BASE_URL`` or
    ``MEMDIR_LLM_API_KEY`` (model from ``MEMDIR_LLM_MODEL``). ``memdir status`` and the chat
    banner show the choice and its source, so an environment variable never switches the
    provider unseen."""
    settings = config.llm
    origin = config.origin("llm.provider")
    source = "default" if origin == "default" else f"llm.provider in {origin}"
    found = [var for var in (BASE_URL_ENV, API_KEY_ENV) if os.environ.get(var)]
    if settings.provider == "none" and found:
        model = settings.model or os.environ.get(MODEL_ENV, "").strip()
        settings = replace(settings, provider="openai", model=model)
        source = f"environment: {' and '.join(found)} set while llm.provider is 'none' ({source})"
    return LLMChoice(settings, source)


def openai_from_config(config: LLMConfig) -> LLM:
    """Build an :class:`~memdir.llm.openai.OpenAIChatLLM` from ``config``."""
    from memdir.llm.openai import OpenAIChatLLM

    return OpenAIChatLLM(
        config.base_url or None,
        config.model or None,
        resolve_api_key(config.api_key, what="llm.api_key") or None,
        timeout=config.timeout,
        max_retries=config.max_retries,
        max_output_tokens=config.max_output_tokens,
    )


def anthropic_from_config(config: LLMConfig) -> LLM:
    """Build an :class:`~memdir.llm.anthropic.AnthropicLLM` from ``config``."""
    from memdir.llm.anthropic import AnthropicLLM

    return AnthropicLLM(
        config.model or None,
        resolve_api_key(config.api_key, what="llm.api_key") or None,
        base_url=config.base_url or None,
        timeout=config.timeout,
        max_retries=config.max_retries,
        max_output_tokens=config.max_output_tokens,
    )


def fake_from_config(config: LLMConfig) -> LLM:
    """A :class:`~memdir.llm.fake.ScriptedLLM` with nothing queued (replies ``""``)."""
    from memdir.llm.fake import ScriptedLLM

    return ScriptedLLM(model=config.model or "scripted")
