"""``/history``: automatic writes read back from the files' own records."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.helpers import write

ARCHIVE = (
    "# Session 2026-11-28 21:40\n\n- date: 2026-11-28 21:40\n- session: 7f3c9a\n"
    "- source: memdir chat\n- archived: 2026-11-28 22:05\n- messages: the last 4\n\n"
    "## Conversation\n\n**user:**\nhi\n"
)
DIARY = (
    "# Dream diary\n\nWritten by `memdir dream --diary`.\n\n## 2026-11-29 03:00\n\n"
    "Promoted 1 entry:\n- Redis lock prefix is lock:order: (memory/2026-11-28.md#L3-L3)\n\n"
)


@pytest.fixture
def recorded(sample: Path) -> Path:
    write(sample, "memory/2026-11-28-lock-design.md", ARCHIVE)
    write(sample, "DREAMS.md", DIARY)
    return sample


def test_api_lists_archives_diary_and_daily_logs_newest_first(
    client: TestClient, recorded: Path
) -> None:
    events = client.get("/api/history").json()["events"]
    whens = [e["when"] for e in events]
    assert whens == sorted(whens, reverse=True)
    by_kind = {e["kind"]: e for e in events}
    assert by_kind["archive"]["when"] == "2026-11-28T22:05"
    assert by_kind["archive"]["path"] == "memory/2026-11-28-lock-design.md"
    assert "session 7f3c9a" in by_kind["archive"]["details"]
    assert by_kind["diary"]["when"] == "2026-11-29T03:00"
    assert by_kind["diary"]["line"] == 5
    daily = [e for e in events if e["kind"] == "daily"]
    assert [e["path"] for e in daily] == ["memory/2026-11-28.md", "memory/2026-11-27.md"]
    assert daily[0]["summary"].startswith("daily log: 4 entries")


def test_kind_filter(client: TestClient, recorded: Path) -> None:
    events = client.get("/api/history", params={"kind": "archive"}).json()["events"]
    assert [e["kind"] for e in events] == ["archive"]
    html = client.get("/history", params={"kind": "archive"}).text
    assert "memory/2026-11-28-lock-design.md" in html and "memory/2026-11-27.md" not in html
    assert client.get("/api/history", params={"kind": "gossip"}).status_code == 400


def test_page_groups_by_day_and_links_to_the_record(client: TestClient, recorded: Path) -> None:
    html = client.get("/history").text
    assert "<h2>2026-11-29</h2>" in html and "<h2>2026-11-28</h2>" in html
    assert 'href="/files/DREAMS.md?lines=5-5#L5"' in html
    assert "archive: session saved from memdir chat" in html


def test_a_git_workspace_shows_memdirs_commits(sample: Path) -> None:
    from memdir import FakeEmbedder, Memory
    from memdir.audit.trail import init_git
    from tests.ui.conftest import make_client

    with Memory(sample, embedder=FakeEmbedder()) as memory:
        init_git(memory.workspace, [])
        memory.write("Deploys freeze on Fridays.", target="memory", section="decisions")
        client = make_client(memory)
        events = client.get("/api/history", params={"kind": "write"}).json()["events"]
        html = client.get("/history").text
    (event,) = events
    assert event["path"] == "MEMORY.md" and event["record"].startswith("git commit ")
    assert any("Deploys freeze on Fridays." in d for d in event["details"])
    assert 'href="/history?kind=write"' in html  # a filter chip for each kind present
