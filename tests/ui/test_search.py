"""``/search`` and ``/api/search``: the data of ``search --json --explain``, highlighted
snippets, links to the lines, escaped note text, and no recalls recorded."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from memdir import Memory
from memdir.memory.facade import MAX_QUERY_CHARS

QUERY = "Redis 分布式锁"


def test_api_is_the_explained_search_response(client: TestClient, mem: Memory) -> None:
    body = client.get("/api/search", params={"q": QUERY}).json()
    expected = mem.search(QUERY, record=False).to_dict(explain=True)
    assert body["results"] == expected["results"]
    assert body["terms"] == expected["terms"]
    assert (body["mode"], body["legs"]) == ("hybrid", ["vector", "keyword"])
    top = body["results"][0]
    assert top["path"] == "memory/2026-11-28.md"
    assert top["start_line"] <= 3 <= top["end_line"]
    assert {"vector", "text", "decay", "mmr_rank"} <= set(top["explain"])


def test_api_takes_n_and_min_score(client: TestClient) -> None:
    body = client.get("/api/search", params={"q": QUERY, "n": 1}).json()
    assert len(body["results"]) == 1
    strict = client.get("/api/search", params={"q": QUERY, "min_score": 1.0}).json()
    assert "no result passed min_score; showing keyword matches" in strict["warnings"]
    assert all(r["explain"]["text"] >= 0.3 for r in strict["results"])


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"q": ""}, "q is empty"),
        ({"q": "redis", "n": "0"}, "n must be between 1 and 50"),
        ({"q": "redis", "n": "lots"}, "n must be a whole number"),
        ({"q": "redis", "min_score": "2"}, "min_score must be between 0 and 1"),
        ({"q": "x" * (MAX_QUERY_CHARS + 1)}, "the limit is"),
    ],
)
def test_bad_search_input_is_a_400_with_the_reason(
    client: TestClient, params: dict[str, str], message: str
) -> None:
    response = client.get("/api/search", params=params)
    assert response.status_code == 400
    assert message in response.json()["error"]


def test_searching_here_records_no_recall(client: TestClient, mem: Memory) -> None:
    client.get("/api/search", params={"q": QUERY})
    client.get("/search", params={"q": QUERY})
    assert mem.recalls.entries() == []
    mem.search(QUERY)  # the agent's search does record
    assert "memory/2026-11-28.md" in [e.path for e in mem.recalls.entries()]


def test_page_shows_hits_with_marked_terms_parts_and_line_links(client: TestClient) -> None:
    html = client.get("/search", params={"q": QUERY}).text
    assert '<input id="q" name="q" type="search" value="Redis 分布式锁"' in html
    link = re.search(
        r'<a class="cite" href="(/files/memory/2026-11-28\.md\?lines=(\d+)-(\d+)#L\d+)"', html
    )
    assert link is not None
    assert int(link.group(2)) <= 3 <= int(link.group(3))
    assert "<mark>Redis</mark>" in html
    assert re.search(r"<mark>分布式锁?</mark>", html)
    for label in ("vector", "keyword", "decay", "MMR rank"):
        assert f"<dt>{label}</dt>" in html
    assert "score = 0.7·vector + 0.3·keyword" in html
    assert re.search(r"0\.7×\d\.\d{3} \+ 0\.3×\d\.\d{3} = \d\.\d{3}", html)


def test_partial_is_the_results_fragment(client: TestClient) -> None:
    html = client.get("/search", params={"q": QUERY, "partial": "1"}).text
    assert "<html" not in html
    assert 'class="hits"' in html


def test_empty_page_explains_itself(client: TestClient) -> None:
    html = client.get("/search").text
    assert "Type to search" in html
    assert client.get("/", follow_redirects=False).headers["location"] == "/search"


def test_note_text_is_escaped(client: TestClient) -> None:
    html = client.get("/search", params={"q": "alert script text"}).text
    assert "memory/pitfalls.md" in html
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&#39;memdir-xss&#39;)&lt;/script&gt;" in html.replace(
        "<mark>", ""
    ).replace("</mark>", "")
