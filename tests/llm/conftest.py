"""Fixtures for the LLM tests: a scriptable chat server on 127.0.0.1.

The server speaks OpenAI's ``/chat/completions`` and Anthropic's ``/v1/messages``. With nothing
queued it answers ``echo: <last message text>``; ``enqueue()`` scripts the next answers and
``requests`` records what arrived (see :mod:`tests.http_server`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.http_server import PROVIDER_ENV, EventStream, ScriptedServer, SleepRecorder, run_server


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)


def openai_reply(text: str, model: str = "m") -> dict[str, Any]:
    """An OpenAI chat completion answering ``text``."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def anthropic_reply(*texts: str, model: str = "m") -> dict[str, Any]:
    """An Anthropic Messages API answer with one text block per item of ``texts``."""
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": t} for t in texts],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


@dataclass
class ChatServer(ScriptedServer):
    """Answers chat requests in the OpenAI or Anthropic format, echoing the last message."""

    def default_answer(self, target: str, payload: Any) -> tuple[int, Any]:
        path = urlsplit(target).path
        last = payload["messages"][-1]["content"] if payload and payload.get("messages") else ""
        if path.endswith("/chat/completions"):
            return 200, openai_reply(f"echo: {last}", payload.get("model", ""))
        if path.endswith("/v1/messages"):
            return 200, anthropic_reply(f"echo: {last}", model=payload.get("model", ""))
        return 404, {"error": f"no such endpoint {path}"}


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    """A scriptable chat server on 127.0.0.1 (port chosen by the OS)."""
    with run_server(ChatServer()) as app:
        yield app


@pytest.fixture
def sleeps() -> SleepRecorder:
    """An injectable sleep that records delays instead of waiting."""
    return SleepRecorder()


def openai_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    """One streamed chat-completion chunk."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def openai_stream(*chunks: dict[str, Any], usage: tuple[int, int] | None = None) -> EventStream:
    """An OpenAI SSE answer: ``chunks`` (see :func:`openai_chunk`), a usage-only chunk, [DONE]."""
    events: list[tuple[str | None, Any]] = [(None, chunk) for chunk in chunks]
    if usage:
        events.append(
            (
                None,
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "choices": [],
                    "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]},
                },
            )
        )
    events.append((None, "[DONE]"))
    return EventStream(events)


def openai_text_stream(*pieces: str) -> EventStream:
    """An OpenAI SSE answer writing ``pieces`` of text, then stopping."""
    chunks = [openai_chunk({"role": "assistant", "content": ""})]
    chunks += [openai_chunk({"content": piece}) for piece in pieces]
    chunks.append(openai_chunk({}, "stop"))
    return openai_stream(*chunks)


def anthropic_stream(*blocks: tuple[str, Any], stop: str = "end_turn") -> EventStream:
    """An Anthropic SSE answer. Each block is ``("text", [pieces])`` or
    ``("tool_use", (id, name, [partial_json pieces]))``."""
    events: list[tuple[str | None, Any]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "m",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 25, "output_tokens": 1},
                },
            },
        ),
        ("ping", {"type": "ping"}),
    ]
    for index, (kind, body) in enumerate(blocks):
        if kind == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in body]
        else:
            call_id, name, pieces = body
            start = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
        )
        events += [
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        ]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 17},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return EventStream(events)
