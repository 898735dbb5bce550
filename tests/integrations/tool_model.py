"""A scripted OpenAI-compatible chat model that drives another agent's tools, for the tests with
real agents (OpenClaw): a real HTTP server on 127.0.0.1 (:class:`tests.http_server.ScriptedServer`)
that answers ``/v1/chat/completions``, streamed or not, by what the request asks for.

- a memory flush turn (its prompt names ``memory/YYYY-MM-DD.md``): a ``write`` call that appends
  :data:`FLUSHED` to that file, then ``NO_REPLY``;
- a compaction's summary request: every ``## heading`` the request asks for, each with "- none";
- a turn offered ``memory_search`` (directly or behind OpenClaw's ``tool_call``): a call to it with
  :data:`QUERY`, then an answer quoting the tool's result;
- anything else: ``NO_REPLY``.

``times`` holds when each request arrived (``time.monotonic()``).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from tests.http_server import EventStream, ScriptedResponse, ScriptedServer
from tests.llm.conftest import openai_chunk, openai_stream

QUERY = "staging database port"
FLUSHED = "- Deploys go through Argo CD (p-913)."
_DAILY_LOG = re.compile(r"memory/\d{4}-\d{2}-\d{2}\.md")
_HEADING = re.compile(r"^## [^\n]+", re.M)


@dataclass
class ToolModel(ScriptedServer):
    times: list[float] = field(default_factory=list)

    def handle(self, path: str, headers: dict[str, str], payload: Any) -> ScriptedResponse:
        self.times.append(time.monotonic())
        return super().handle(path, headers, payload)

    def default_answer(self, target: str, payload: Any) -> tuple[int, Any]:
        if not isinstance(payload, dict) or not target.endswith("/chat/completions"):
            return 404, {"error": f"nothing here: {target}"}
        messages = payload.get("messages") or []
        tools = {t["function"]["name"] for t in payload.get("tools") or []}
        system = _text(messages[0]) if messages else ""
        last = messages[-1] if messages else {}
        if system.startswith("You are a context summarization assistant"):
            asked = "\n".join(_text(m) for m in messages[1:])
            headings = dict.fromkeys(h.strip() for h in _HEADING.findall(asked))
            return 200, _answer(payload, text="\n\n".join(f"{h}\n- none" for h in headings))
        flush = _DAILY_LOG.search(system) if "memory flush" in system else None
        if flush is not None:
            if last.get("role") == "tool":
                return 200, _answer(payload, text="NO_REPLY")
            write = {"path": flush.group(0), "content": FLUSHED + "\n"}
            return 200, _answer(payload, call=("write", write))
        results = [_text(m) for m in messages if m.get("role") == "tool"]
        if results:
            return 200, _answer(payload, text="From memory: " + results[-1])
        if "memory_search" in tools:
            return 200, _answer(payload, call=("memory_search", {"query": QUERY}))
        if "tool_call" in tools:  # OpenClaw's compact tool surface
            call = {"id": "memory_search", "args": {"query": QUERY}}
            return 200, _answer(payload, call=("tool_call", call))
        return 200, _answer(payload, text="NO_REPLY")

    def bodies(self) -> list[dict[str, Any]]:
        return [r.json for r in self.requests if isinstance(r.json, dict)]


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def _answer(
    payload: dict[str, Any], *, text: str | None = None, call: tuple[str, Any] | None = None
) -> Any:
    if call is not None:
        tool_calls = [
            {
                "index": 0,
                "id": "call_1",
                "type": "function",
                "function": {"name": call[0], "arguments": json.dumps(call[1])},
            }
        ]
        delta: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": tool_calls}
        finish = "tool_calls"
    else:
        delta = {"role": "assistant", "content": text}
        finish = "stop"
    if payload.get("stream"):
        stream: EventStream = openai_stream(
            openai_chunk(delta), openai_chunk({}, finish), usage=(10, 5)
        )
        return stream
    message = {k: v for k, v in delta.items() if k != "tool_calls" or call is not None}
    if call is not None:
        message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in tool_calls]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": payload.get("model", "m"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
