"""The service's JSON routes for other agents' plugins (:mod:`memdir.service.agent_routes`) and
the Origin check, against a real ``memdir daemon run``."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from memdir.clock import now
from memdir.service.agent_routes import user_texts
from tests.service.conftest import Service


def _call(
    service: Service,
    path: str,
    body: Any = None,
    *,
    origin: str | None = None,
    token: str | None = None,
) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{service.port}{path}", data=data, method="POST" if data else "GET"
    )
    request.add_header("Authorization", f"Bearer {token or service.token}")
    if origin:
        request.add_header("Origin", origin)
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        raw = error.read()
        try:
            return error.code, json.loads(raw)
        except ValueError:
            return error.code, raw.decode()


def test_a_tool_call_answers_what_memdir_serve_answers(service: Service, notes: Path) -> None:
    where = f"?workspace={notes}"
    status, found = _call(service, f"/v1/tools/memory_search{where}", {"query": "database port"})
    assert status == 200
    assert found["results"][0]["citation"].startswith("MEMORY.md#L") and "5432" in json.dumps(found)
    status, read = _call(service, f"/v1/tools/memory_get{where}", {"path": "MEMORY.md", "from": 3})
    assert status == 200 and read["text"].startswith("## Facts")
    status, wrong = _call(service, f"/v1/tools/memory_get{where}", {"path": "../etc/passwd"})
    assert status == 422 and "error" in wrong
    status, unknown = _call(service, f"/v1/tools/memory_search{where}", {"q": "x"})
    assert status == 422 and "unknown argument" in unknown["error"]
    shared = f"?workspace={notes}&scope=shared"
    status, hidden = _call(service, f"/v1/tools/memory_search{shared}", {"query": "database"})
    assert status == 200 and all(r["path"] != "MEMORY.md" for r in hidden["results"])
    nowhere = "/v1/tools/memory_search?workspace=/nonexistent"
    status, missing = _call(service, nowhere, {"query": "x"})
    assert status == 404 and "memdir init" in missing["error"]


def test_recall_capture_and_status(service: Service, notes: Path) -> None:
    where = f"?workspace={notes}"
    status, recall = _call(service, f"/v1/recall{where}", {"prompt": "production database port?"})
    assert status == 200
    block = recall["block"]
    assert block.startswith("<relevant-memories>") and "untrusted" in block.lower()
    said = [
        {"role": "user", "content": [{"type": "text", "text": "Remember that I use Helix."}]},
        {"role": "assistant", "content": "Not logged in · Please run /login"},
        {"role": "user", "content": "Please remember: always deploy with --canary."},
    ]
    status, captured = _call(service, f"/v1/capture{where}", {"messages": said, "session": "s1"})
    assert status == 200 and captured == {"captured": 2}
    daily = (notes / "memory" / f"{now().date().isoformat()}.md").read_text(encoding="utf-8")
    assert "Helix" in daily and "--canary" in daily and "Not logged in" not in daily
    status, info = _call(service, f"/v1/status{where}")
    assert status == 200 and info["workspace"] == str(notes) and info["files"] >= 1


def test_a_web_page_s_origin_is_refused_and_the_token_is_still_needed(
    service: Service, notes: Path
) -> None:
    path = f"/v1/status?workspace={notes}"
    assert _call(service, path, origin="http://evil.example")[0] == 403
    assert _call(service, path, origin="null")[0] == 403
    assert _call(service, path, origin=f"http://127.0.0.1:{service.port}")[0] == 200
    assert _call(service, path, origin="http://localhost:5173")[0] == 200
    assert _call(service, path, token="x" * 43)[0] == 401


def test_user_texts_reads_only_the_user_s_words() -> None:
    messages = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": [{"type": "text", "text": "c"}, {"type": "image"}]},
        "junk",
        {"role": "user", "content": "   "},
    ]
    assert user_texts(messages) == ["a", "c"]
