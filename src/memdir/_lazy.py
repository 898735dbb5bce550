"""Re-exports that are imported on first use, so that ``import memdir`` (and every command line
start) loads only what the command needs (PEP 562 ``__getattr__``)."""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (see memdir.client)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any


def lazy_exports(
    namespace: dict[str, Any], exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` for ``exports`` (name → module).

    The first access imports the module and keeps the value in the package's ``namespace``
    (its ``globals()``), so later accesses cost nothing.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__
