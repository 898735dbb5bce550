"""Refusals of native tools, remembered under MEMDIR_HOME per provider, base URL and model."""

from __future__ import annotations

from datetime import datetime

from memdir.llm import ScriptedLLM
from memdir.llm.tool_support import (
    forget_refusal,
    refusal_for,
    remember_refusal,
    support_file,
    tool_refusals,
)

NOW = datetime(2026, 11, 30, 9, 0)


class Served(ScriptedLLM):
    def __init__(self, base_url: str, model: str) -> None:
        super().__init__(model=model)
        self.base_url = base_url


def test_remembered_per_provider_base_url_and_model(isolated_env):
    ollama = Served("http://127.0.0.1:11434/v1", "gemma:2b")
    other_model = Served("http://127.0.0.1:11434/v1", "qwen2.5")
    assert refusal_for(ollama) is None

    entry = remember_refusal(ollama, "HTTP 400:   gemma:2b does not\nsupport tools", now=NOW)

    assert support_file() == isolated_env / "chat-tools.json"
    assert refusal_for(ollama) == entry
    assert entry.reason == "HTTP 400: gemma:2b does not support tools"
    assert entry.since == "2026-11-30T09:00:00"
    assert entry.where == "fake · http://127.0.0.1:11434/v1 · gemma:2b"
    assert refusal_for(other_model) is None

    remember_refusal(ollama, "again", now=NOW)  # replaces, never duplicates
    assert [r.reason for r in tool_refusals()] == ["again"]

    assert forget_refusal(ollama) and not forget_refusal(ollama)
    assert tool_refusals() == []


def test_a_damaged_file_counts_as_empty(isolated_env):
    support_file().write_text("{not json", encoding="utf-8")
    assert tool_refusals() == []
    support_file().write_text('{"refusals": [{"provider": "x"}, 3]}', encoding="utf-8")
    assert tool_refusals() == []
    remember_refusal(ScriptedLLM(), "refused", now=NOW)  # and it is rewritten whole
    assert len(tool_refusals()) == 1
