"""Fixtures for the Claude Code hook tests: real-format hook input and transcripts.

``fixtures/transcript.jsonl`` is a transcript Claude Code 2.1.197 wrote (run with ``claude -p``
against a local fake of the Anthropic API; paths replaced, Claude Code's own skill listing left
out); ``fixtures/hook_inputs.json`` the hook input it sent on stdin for each event.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
SESSION_ID = "11111111-2222-4333-8444-555555555555"
HookInput = Callable[..., str]


@pytest.fixture
def fake_config(isolated_env: Path) -> Path:
    """The user config: the fake embedder (quick, deterministic)."""
    path = isolated_env / "config.toml"
    path.write_text('[embedding]\nprovider = "fake"\n', encoding="utf-8")
    return path


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    """A copy of the real transcript, to append to."""
    target = tmp_path / "claude" / f"{SESSION_ID}.jsonl"
    target.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "transcript.jsonl", target)
    return target


@pytest.fixture
def hook_input(transcript: Path, tmp_path: Path) -> HookInput:
    """``hook_input("PreCompact", prompt=…)``: Claude Code's JSON for that event."""
    inputs = json.loads((FIXTURES / "hook_inputs.json").read_text(encoding="utf-8"))

    def make(event: str, **fields: Any) -> str:
        data = dict(inputs[event])
        data.update(transcript_path=str(transcript), cwd=str(tmp_path), **fields)
        return json.dumps(data)

    return make


def write_llm_config(home: Path, llm_url: str) -> None:
    """memdir's user config: the fake embedder, and ``[llm]`` at an OpenAI-compatible server
    (its key in ``MEMDIR_TEST_LLM_KEY``)."""
    (home / "config.toml").write_text(
        '[embedding]\nprovider = "fake"\n'
        f'[llm]\nprovider = "openai"\nbase_url = "{llm_url}/v1"\nmodel = "m"\n'
        'api_key = "env:MEMDIR_TEST_LLM_KEY"\ntimeout = 10\nmax_retries = 1\n',
        encoding="utf-8",
    )


def append_turn(transcript: Path, user: str, assistant: str) -> None:
    """Append one user line and one assistant line in Claude Code's shape."""
    lines = [
        {"type": "user", "isSidechain": False, "message": {"role": "user", "content": user}},
        {
            "type": "assistant",
            "isSidechain": False,
            "message": {
                "id": f"msg_{abs(hash(assistant))}",
                "role": "assistant",
                "content": [{"type": "text", "text": assistant}],
            },
        },
    ]
    with transcript.open("a", encoding="utf-8") as fh:
        for line in lines:
            fh.write(json.dumps(line) + "\n")
