"""500 scripted turns: the context stays bounded and nothing the user asked to remember is lost.

The conversation and the scripted model are those of ``benchmarks/chat_tokens.py``, which prints
the same run as a table (see docs/benchmarks-lifecycle.md); native tool definitions are counted.
"""

from __future__ import annotations

import pytest
from benchmarks.chat_tokens import run_conversation


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDIR_NOW", "2026-11-30T09:00")


def test_500_turns_stay_within_budget_and_keep_every_remembered_fact(tmp_path, clock):
    run = run_conversation(tmp_path / "ws", turns=500, context_window=8192, max_output=1024)

    assert run.errors == []
    assert len(run.tokens) == 500
    # Every chat request fits the compaction budget, so the reply always has its room.
    assert max(run.tokens) <= run.budget <= run.window - 1024
    # Any request at all (memory flush and summaries included) fits the window with the reply.
    assert run.largest_request <= run.window - 1024
    # The context does not creep upwards: the last 100 turns look like the first 200.
    assert max(run.tokens[-100:]) <= max(run.tokens[:200]) + 200
    assert run.compactions >= 5
    assert run.flushes == run.compactions or run.flushes == run.compactions + 1
    lost = [fact for fact, where in run.facts.items() if not where]
    assert lost == [], lost
    assert len(run.facts) == 25
