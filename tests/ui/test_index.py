"""``/index``: Memory.status as JSON and as a page that refreshes while the index changes."""

from __future__ import annotations

import re
from pathlib import Path

from starlette.testclient import TestClient

from memdir import Memory
from memdir.config.settings import load_config
from memdir.ui.views.index import _progress
from tests.helpers import write
from tests.ui.conftest import make_client


def test_api_is_memory_status(client: TestClient, mem: Memory) -> None:
    mem.sync()
    body = client.get("/api/index").json()
    status = mem.status()
    assert body["files"] == status["files"] == 6  # MEMORY.md, 2 daily logs, 2 notes, 1 skill
    assert body["chunks"] == status["chunks"]
    assert body["embedding"] == status["embedding"]
    assert body["pending_vectors"] == 0


def test_page_shows_counts_model_and_warnings(
    client: TestClient, mem: Memory, sample: Path
) -> None:
    (sample / "memory/blob.md").write_bytes(b"\x00\x01binary\xff\xfe" * 50)
    mem.sync()
    html = client.get("/index").text
    status = mem.status()
    assert f'<span class="big">{status["chunks"]}</span>' in html
    assert "fake · fake-bow-64 · 64 dims" in html
    assert 'href="/files/memory/blob.md"' in html
    assert status["file_warnings"]["memory/blob.md"] in html
    assert 'data-refresh="/index?partial=1"' in html


def test_partial_refreshes_fast_while_files_are_dirty(
    client: TestClient, mem: Memory, sample: Path
) -> None:
    mem.sync()
    calm = client.get("/index", params={"partial": "1"}).text
    assert "<html" not in calm and 'data-interval="10000"' in calm
    write(sample, "memory/new-note.md", "# New\n- something changed\n")
    busy = client.get("/index", params={"partial": "1"}).text
    assert 'data-interval="2000"' in busy
    assert re.search(r"1 changed, 0 deleted since the last sync", busy)


def test_keyword_only_mode_is_said(sample: Path) -> None:
    config = load_config(sample, {"embedding": {"provider": "none"}})
    with Memory(sample, config=config) as keyword_only:
        html = make_client(keyword_only).get("/index").text
    assert "keyword-only mode: no embedder" in html


def test_progress_counts_pending_vectors() -> None:
    progress = _progress({"vectors": 30, "pending_vectors": 10, "dirty_files": 0})
    assert progress["share"] == 0.75 and progress["busy"] and progress["total"] == 40
    assert _progress({"vectors": 0, "pending_vectors": 0})["share"] == 1.0


def _render_index(mem: Memory, status: dict[str, object]) -> str:
    from memdir.ui.inspector import Inspector, UIOptions

    ui = Inspector(mem, UIOptions())
    context = {"status": status, "progress": _progress(status), "warnings": []}
    return ui.templates.get_template("_index_body.html").render(file_url=str, **context)


def test_background_embedding_progress_is_shown(mem: Memory) -> None:
    status = {**mem.status(), "vectors": 300, "pending_vectors": 100}
    status["embedding_progress"] = {
        "running": True,
        "embedded": 300,
        "pending": 100,
        "rate": 4.25,
        "eta_seconds": 24.0,
        "error": None,
        "last_batch_seconds_ago": 1.0,
    }
    html = _render_index(mem, status)
    assert "embedding in the background · 4.2 chunks/s · about 24 s left" in html
    assert 'data-interval="2000"' in html
    elsewhere = {**status["embedding_progress"], "running": False, "rate": None}  # type: ignore[dict-item]
    html = _render_index(mem, {**status, "embedding_progress": elsewhere})
    assert "another process is embedding (last batch 1 s ago) · about 24 s left" in html
    idle = {**elsewhere, "last_batch_seconds_ago": None, "eta_seconds": None}
    html = _render_index(mem, {**status, "embedding_progress": idle})
    assert "no embedding running" in html
