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

from tests.http_server import PROVIDER_ENV, ScriptedServer, SleepRecorder, run_server


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
