"""The light and REM phases on their own."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from memdir.dreaming.phases import (
    daily_signal,
    dedupe_blocks,
    light_phase,
    rem_phase,
    theme_strength,
    theme_strengths,
)
from memdir.dreaming.promotion import NoteBlock
from memdir.workspace.layout import Workspace
from tests.dreaming.factories import make_entry
from tests.helpers import write

NOW = datetime(2026, 11, 30, 9, 0)


def test_light_reads_today_and_yesterday_and_drops_near_duplicates(workspace: Path) -> None:
    write(workspace, "memory/2026-11-28.md", "# old\n\n- too old to count\n")
    write(
        workspace,
        "memory/2026-11-29.md",
        "# 2026-11-29\n\n- Redis runs on port 6380 in staging\n- 周五晚上 22:00 开始数据库迁移\n",
    )
    write(
        workspace,
        "memory/2026-11-30.md",
        "# 2026-11-30\n\n- redis runs on port 6380 in staging!\n- a brand new thought\n"
        "<!-- memdir:dream:begin 2026-11-30 -->\n"
        "- generated <!-- memdir:promoted x#L1-L1 key=abcdef -->\n"
        "<!-- memdir:dream:end -->\n",
    )
    report = light_phase(Workspace(workspace), NOW)
    assert report.notes == ["memory/2026-11-30.md", "memory/2026-11-29.md"]
    assert report.blocks == 4
    assert [(b.path, b.text) for b in report.candidates] == [
        ("memory/2026-11-30.md", "redis runs on port 6380 in staging!"),  # the newer wins
        ("memory/2026-11-30.md", "a brand new thought"),
        ("memory/2026-11-29.md", "周五晚上 22:00 开始数据库迁移"),
    ]


def test_dedupe_keeps_the_first_of_near_duplicates() -> None:
    blocks = [
        NoteBlock("a.md", 1, 1, "deploy the billing service on friday"),
        NoteBlock("b.md", 1, 1, "Deploy the billing service on Friday."),
        NoteBlock("c.md", 1, 1, "deploy the billing service on monday"),
    ]
    assert [b.path for b in dedupe_blocks(blocks)] == ["a.md", "c.md"]


def test_daily_signal_is_the_best_block_containment_from_one_half() -> None:
    blocks = [NoteBlock("n.md", 3, 3, "staging redis listens on port 6380")]
    snippet = "# day\n\n- The staging Redis cluster listens on port 6380, not 6379."
    assert daily_signal(snippet, blocks) == 1.0
    assert daily_signal("- redis on 6380, somewhere", blocks) == 0.0  # 2 of 5 tokens
    assert daily_signal("- staging redis port", blocks) == pytest.approx(0.6)  # 3 of 5
    assert daily_signal(snippet, []) == 0.0


def test_rem_themes_need_several_entries_and_days() -> None:
    entries = [
        make_entry(
            path="memory/2026-11-25.md", tags=("migrations", "postgres"), days=("2026-11-29",)
        ),
        make_entry(
            path="memory/2026-11-26.md", tags=("migration",), days=("2026-11-28", "2026-11-27")
        ),
        make_entry(path="memory/2026-11-27.md", tags=("postgres", "redis"), days=("2026-11-29",)),
        make_entry(
            path="memory/2026-10-01.md",
            tags=("redis",),
            days=("2026-10-01",),
            last="2026-10-01T09:00",
        ),  # recalled too long ago to count
    ]
    themes = rem_phase(entries, NOW)
    # migration(s): 2 entries over 3 days → 0.5·2/3 + 0.5·3/3 = 0.833; postgres: 2 entries,
    # both recalled on one day only → 0.5; redis: the old entry is out of the 30-day window.
    assert [(t.tag, t.entries, t.days) for t in themes] == [("migration", 2, 3)]
    assert themes[0].strength == pytest.approx(theme_strength(2, 3)) == pytest.approx(5 / 6)
    assert set(themes[0].variants) == {"migration", "migrations"}
    assert theme_strengths(themes) == {
        "migration": pytest.approx(5 / 6),
        "migrations": pytest.approx(5 / 6),
    }
    assert theme_strength(2, 2) < 0.75 <= theme_strength(3, 2)
