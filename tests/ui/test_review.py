"""``/review``: the weekly review (``memdir review``) as a page and JSON."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from memdir import Memory
from tests.helpers import write

NOTE = (
    "# 2026-11-25\n\n- The staging Redis port is 6380.\n- The staging Redis port is 6379.\n"
    "- TODO: rotate the deploy keys\n"
)


@pytest.fixture
def noted(sample: Path, mem: Memory) -> Path:
    write(sample, "memory/2026-11-25.md", NOTE)
    mem.sync()
    return sample


def test_api_is_memory_review(client: TestClient, mem: Memory, noted: Path) -> None:
    body = client.get("/api/review", params={"since": "all"}).json()
    assert body == mem.review(since="all").to_dict()
    assert body["counts"]["contradictions"] >= 1


def test_page_shows_both_places_of_a_contradiction(client: TestClient, noted: Path) -> None:
    html = client.get("/review", params={"since": "all"}).text
    assert '<a href="/files/memory/2026-11-25.md?lines=3-3#L3">memory/2026-11-25.md#L3</a>' in html
    assert '<a href="/files/memory/2026-11-25.md?lines=4-4#L4">memory/2026-11-25.md#L4</a>' in html
    assert re.search(r"6380 ≠ 6379|6379 ≠ 6380", html)
    assert "MEMORY.md budget" in html and "Never recalled" in html
    assert '<a href="/review?since=all" aria-current="true">' in html


def test_a_bad_window_is_a_400(client: TestClient) -> None:
    response = client.get("/api/review", params={"since": "fortnight"})
    assert response.status_code == 400
    assert "7d, 2w, 12h" in response.json()["error"]
