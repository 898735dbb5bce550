"""The secrets issue 35's probe found kept — a Hugging Face token, a DigitalOcean token, "the pw
is …", "login/pass: admin / …" — and the general rules (a keyword near a value, a random-looking
string), through the three writers the probe used: ``memdir remember``, Claude Code's
PreCompact hook (the memory flush, and the capture it falls back to without a model) and its
SessionEnd archive. No piece of a secret may be in any file of the workspace afterwards (the
audit log keeps the lines each write added), and the notes must say ``[REDACTED:<kind>]``. On
9657cf2 the detector missed every one of these texts."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from memdir import init_workspace
from memdir.cli import cli
from memdir.hooks.events import run_hook
from memdir.llm.fake import ScriptedLLM
from tests.hooks.conftest import HookInput, append_turn
from tests.privacy_corpus import ROUND3, kept_parts

TODAY = "2026-12-02"
CASES = pytest.mark.parametrize(
    ("text", "secret", "kind"), ROUND3, ids=[f"{n:02d} {r[2]}" for n, r in enumerate(ROUND3)]
)


@pytest.fixture
def ws(tmp_path: Path, fake_config: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMDIR_NOW", f"{TODAY}T10:00:00")
    root, _ = init_workspace(tmp_path / "ws", "en")
    return root


def everything(root: Path) -> str:
    return "\n".join(
        p.read_bytes().decode("utf-8", "replace") for p in root.rglob("*") if p.is_file()
    )


def notes(root: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in (root / "memory").glob("*.md"))


def check(root: Path, secret: str, kind: str) -> None:
    assert kept_parts(secret, everything(root)) == []
    assert f"[REDACTED:{kind}]" in notes(root)


@CASES
def test_remember(ws: Path, text: str, secret: str, kind: str) -> None:
    done = CliRunner().invoke(cli, ["-w", str(ws), "remember", text], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    check(ws, secret, kind)


@CASES
def test_pre_compact_flush(
    ws: Path, hook_input: HookInput, transcript: Path, text: str, secret: str, kind: str
) -> None:
    append_turn(transcript, f"note this for later: {text}", "Noted.")
    llm = ScriptedLLM([f"- {text}\n- the release train leaves on Tuesdays"])
    run_hook("pre-compact", hook_input("PreCompact"), ws, llm_factory=lambda _ws: llm)
    assert "release train" in notes(ws)
    check(ws, secret, kind)


@CASES
def test_pre_compact_capture_without_a_model(
    ws: Path, hook_input: HookInput, transcript: Path, text: str, secret: str, kind: str
) -> None:
    append_turn(transcript, f"Remember: {text}", "Noted.")
    reply = run_hook("pre-compact", hook_input("PreCompact"), ws, llm_factory=lambda _ws: None)
    assert any("captured" in n for n in reply.notes), reply.notes
    check(ws, secret, kind)


@CASES
def test_session_end_archive(
    ws: Path, hook_input: HookInput, transcript: Path, text: str, secret: str, kind: str
) -> None:
    append_turn(transcript, f"keep this: {text}", "Kept.")
    reply = run_hook("session-end", hook_input("SessionEnd"), ws, llm_factory=lambda _ws: None)
    assert any("archived" in n for n in reply.notes), reply.notes
    check(ws, secret, kind)
