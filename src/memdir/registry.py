"""A registry of providers keyed by name, shared by embedders and LLMs (no if/elif chains).

Built-in providers are registered lazily, on first use, by the ``load_builtins`` callback, so
importing memdir never imports an optional SDK.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from memdir.errors import ConfigError

C = TypeVar("C")
T = TypeVar("T")


class ProviderRegistry(Generic[C, T]):
    """Factories ``config → provider | None`` by name.

    Args:
        what: how errors name the setting (e.g. ``"embedding provider"``).
        load_builtins: registers the built-in providers; called once, on first use.
    """

    def __init__(self, what: str, load_builtins: Callable[[], None]) -> None:
        self._what = what
        self._load_builtins: Callable[[], None] | None = load_builtins
        self._factories: dict[str, Callable[[C], T | None]] = {}

    def register(self, name: str, factory: Callable[[C], T | None]) -> None:
        """Make ``factory`` available under ``name``."""
        self._factories[name] = factory

    def _ensure_loaded(self) -> None:
        if self._load_builtins is not None:
            load, self._load_builtins = self._load_builtins, None
            load()

    def names(self) -> list[str]:
        """The registered names, sorted."""
        self._ensure_loaded()
        return sorted(self._factories)

    def create(self, name: str, config: C) -> T | None:
        """Build the provider ``name`` from ``config``.

        Raises:
            ConfigError: the name is unknown (the message lists the known ones).
        """
        self._ensure_loaded()
        factory = self._factories.get(name)
        if factory is None:
            raise ConfigError(
                f"unknown {self._what} {name!r}: choose one of {', '.join(self.names())}"
            )
        return factory(config)
