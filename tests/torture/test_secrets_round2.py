"""Every secret issue 27's probe found kept under the default ``redact``, through every writer
that stores text on its own (``pytest -m torture``).

Each probe of :data:`tests.privacy_corpus.ROUND2` (AWS secret keys, "secret access key is …",
Chinese 密码/口令/秘钥 phrasing, a Slack app token, a URL password with ``@`` and ``!``, quoted
wifi passwords, Azure, npm and GCP credentials, a PEM key over several lines) is written, with
the default config, through ``Memory.write`` (daily log and MEMORY.md), ``memdir remember``, the
MCP ``memory_write`` tool, auto-capture, the pre-compaction flush, extraction, a session archive
and a dream promotion. Afterwards no piece of the secret may be anywhere in the workspace (its
notes, MEMORY.md, and ``.memdir/``: the audit log keeps the lines each write added), and the
Markdown written must say ``[REDACTED:<kind>]``.
The fast unit tests of the same paths are in ``tests/test_privacy.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from memdir import FakeEmbedder, Memory, init_workspace
from memdir.cli import cli
from memdir.lifecycle.archive import archive_session
from memdir.lifecycle.capture import AutoCapture
from memdir.lifecycle.extract import extract_memories
from memdir.lifecycle.flush import run_memory_flush
from memdir.llm.base import Message
from memdir.llm.fake import ScriptedLLM
from memdir.mcp.server import MemoryTools
from memdir.workspace.layout import Workspace
from tests.dreaming.factories import seed_recalls
from tests.privacy_corpus import ROUND2, kept_parts
from tests.torture.conftest import TALLY

pytestmark = pytest.mark.torture

NOW = datetime(2026, 11, 30, 9, 0)
NOTE = "memory/2026-11-28.md"


def _memory_write(root: Path, text: str) -> None:
    with Memory(root, embedder=FakeEmbedder()) as mem:
        assert mem.write(text).written


def _memory_write_section(root: Path, text: str) -> None:
    with Memory(root, embedder=FakeEmbedder()) as mem:
        assert mem.write(text, target="memory", section="facts").written


def _remember_cli(root: Path, text: str) -> None:
    result = CliRunner().invoke(
        cli, ["remember", text], env={"MEMDIR_WORKSPACE": str(root)}, catch_exceptions=False
    )
    assert result.exit_code == 0 and "remembered in" in result.output, result.output


def _mcp_tool(root: Path, text: str) -> None:
    with Memory(root, embedder=FakeEmbedder()) as mem:
        assert MemoryTools(mem).call("memory_write", {"text": text})["written"]


def _capture(root: Path, text: str) -> None:
    result = AutoCapture(Workspace(root)).consider(f"Remember: {text}", now=NOW)
    assert result is not None and result.written


def _flush(root: Path, text: str) -> None:
    llm = ScriptedLLM()
    llm.enqueue(f"- {text}\n- the release train leaves on Tuesdays")
    result = run_memory_flush(Workspace(root), [Message("user", text)], llm, now=NOW)
    assert result.appended >= 2 and not result.warnings


def _extract(root: Path, text: str) -> None:
    llm = ScriptedLLM()
    llm.enqueue(json.dumps({"items": [{"category": "project fact", "text": text}]}))
    report = extract_memories(Workspace(root), [Message("user", text)], llm, now=NOW)
    assert [r.written for r in report.results] == [True], report.warnings


def _archive(root: Path, text: str) -> None:
    messages = [Message("user", f"note this:\n{text}"), Message("assistant", "noted")]
    result = archive_session(
        Workspace(root), messages, session_id="s-round2", started_at=NOW, now=NOW, llm=None
    )
    assert result is not None


def _promote(root: Path, text: str) -> None:
    body = f"- {text}"
    (root / NOTE).write_text(f"# 2026-11-28\n\n{body}\n", encoding="utf-8")
    with Memory(root, embedder=FakeEmbedder()) as mem:
        last = 2 + len(body.split("\n"))
        seed_recalls(mem.recalls, NOTE, 3, last, body, until=NOW)
        report = mem.dream(apply=True)
    assert [o.status for o in report.promotion.outcomes] == ["promoted"]


WRITERS: dict[str, Callable[[Path, str], None]] = {
    "Memory.write": _memory_write,
    "Memory.write MEMORY.md": _memory_write_section,
    "memdir remember": _remember_cli,
    "MCP memory_write": _mcp_tool,
    "auto-capture": _capture,
    "flush": _flush,
    "extraction": _extract,
    "session archive": _archive,
    "dream promotion": _promote,
}


def stored(root: Path, writer: str) -> tuple[str, str]:
    """(every file memdir keeps in the workspace, the Markdown it wrote), as text.

    A promotion reads a note a person wrote (the secret is there on purpose), and the recall
    store holds snippets of it: only what dreaming wrote is looked at.
    """
    if writer == "dream promotion":
        files = [root / "MEMORY.md", root / "DREAMS.md", root / ".memdir" / "audit.jsonl"]
        markdown = [root / "MEMORY.md"]
    else:
        files = [p for p in root.rglob("*") if p.is_file()]
        markdown = [p for p in files if p.suffix == ".md" and ".memdir" not in p.parts]
    read = [p.read_bytes().decode("utf-8", "replace") for p in files if p.is_file()]
    return "\n".join(read), "\n".join(p.read_text(encoding="utf-8") for p in markdown)


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize(
    ("text", "secret", "kind"), ROUND2, ids=[f"{n:02d} {r[2]}" for n, r in enumerate(ROUND2)]
)
def test_no_piece_of_the_secret_is_stored(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    writer: str,
    text: str,
    secret: str,
    kind: str,
) -> None:
    monkeypatch.setenv("MEMDIR_NOW", NOW.isoformat())
    root, _ = init_workspace(tmp_path / "ws", "en")
    WRITERS[writer](root, text)
    everything, markdown = stored(root, writer)
    assert kept_parts(secret, everything) == [], f"{writer} kept part of a {kind}"
    assert f"[REDACTED:{kind}]" in markdown
    TALLY["secret probes written (round 2)"] += 1
