"""The current time, overridable with ``MEMDIR_NOW`` for tests and reproducible benchmarks."""

from __future__ import annotations

import os
from datetime import datetime

from memdir.errors import ConfigError


def now() -> datetime:
    """Local time now, or ``MEMDIR_NOW`` (ISO 8601 date or date-time) when it is set.

    Raises:
        ConfigError: ``MEMDIR_NOW`` is not an ISO date-time.
    """
    value = os.environ.get("MEMDIR_NOW", "").strip()
    if not value:
        return datetime.now()
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise ConfigError(
            f"MEMDIR_NOW={value!r} is not an ISO date-time (e.g. 2026-11-30T09:00)"
        ) from exc
    # Aware times become local naive times so that dates compare with file names.
    return parsed.astimezone().replace(tzinfo=None) if parsed.tzinfo else parsed
