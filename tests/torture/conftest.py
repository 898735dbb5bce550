"""Shared pieces of the torture suite: how hard to push, and the tally it reports.

The fast cases run by default; ``pytest -m torture`` runs the long ones (``.ci/run`` does).
Each case adds what it tried to :data:`TALLY`; the figures are printed at the end of the run
(``docs/reliability.md`` quotes them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

#: What the suite tried and what it lost, by name ("kill -9 during writes", "lines lost", …).
TALLY: Counter[str] = Counter()


def scale(fast: int, long: int, request: pytest.FixtureRequest) -> int:
    """``long`` for a test marked ``torture``, else ``fast``."""
    return long if request.node.get_closest_marker("torture") is not None else fast


@pytest.fixture(scope="session", autouse=True)
def torture_tally() -> Iterator[Counter[str]]:
    yield TALLY
    if TALLY:
        figures = ", ".join(f"{name}: {count}" for name, count in sorted(TALLY.items()))
        print(f"\nTORTURE TALLY {figures}")
