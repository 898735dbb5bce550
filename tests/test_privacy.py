"""Secrets on automatic writes: the detector on the corpus, redact/refuse/off, and every writer
(write tool, capture, flush, extraction, archives, dream promotions, the MCP tool)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from memdir import Memory
from memdir.config.settings import Config, load_config
from memdir.errors import ConfigError
from memdir.lifecycle.capture import AutoCapture
from memdir.safety.privacy import SecretGuard, SecretRefused
from memdir.workspace.layout import Workspace
from tests.privacy_corpus import (
    AWS_KEY_ID,
    AWS_SECRET,
    DB_URL_PASSWORD,
    GITHUB_CLASSIC,
    NORMAL,
    PEM,
    SECRETS,
    kept_parts,
)

NOW = datetime(2026, 11, 30, 9, 0)
TODAY = "memory/2026-11-30.md"


@pytest.mark.parametrize(("text", "secret", "kind"), SECRETS)
def test_every_secret_of_the_corpus_is_redacted(text: str, secret: str, kind: str) -> None:
    redacted, kinds = SecretGuard().redact(text)
    assert kept_parts(secret, redacted) == []
    assert kind in kinds
    assert f"[REDACTED:{kind}]" in redacted


@pytest.mark.parametrize("text", NORMAL)
def test_ordinary_notes_are_left_alone(text: str) -> None:
    assert SecretGuard().redact(text) == (text, [])


def test_redaction_keeps_the_rest_of_the_sentence() -> None:
    text, kinds = SecretGuard().redact("我的密码是abc12345，别忘了 and port 5433")
    assert text == "我的密码是[REDACTED:password]，别忘了 and port 5433"
    assert kinds == ["password"]


def test_refuse_raises_with_the_kinds_found() -> None:
    with pytest.raises(SecretRefused, match="GitHub token"):
        SecretGuard("refuse").check_fact(f"token {GITHUB_CLASSIC}")
    assert SecretGuard("refuse").check_fact("port 5433") == ("port 5433", [])


def test_off_checks_nothing_and_extra_patterns_add_kinds() -> None:
    assert SecretGuard("off").redact("password is hunter2!") == ("password is hunter2!", [])
    guard = SecretGuard(extra_patterns=[r"\bACME-\d{6}\b"])
    assert guard.redact("badge ACME-123456") == ("badge [REDACTED:custom]", ["custom"])


def test_bad_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match=r"privacy\.secrets"):
        SecretGuard("maybe")
    with pytest.raises(ConfigError, match="not a regex"):
        SecretGuard(extra_patterns=["("])


# -- the writers -------------------------------------------------------------------------------


def test_the_write_tool_says_what_was_redacted(memory, workspace) -> None:
    result = memory.write(f"Remember my GitHub token is {GITHUB_CLASSIC}")
    assert result.written and result.redacted == ("GitHub token",)
    assert "redacted GitHub token" in result.reason and "does not store secrets" in result.reason
    stored = (workspace / result.path).read_text(encoding="utf-8")
    assert GITHUB_CLASSIC not in stored and "[REDACTED:GitHub token]" in stored
    assert result.to_dict()["redacted"] == ["GitHub token"]


def test_the_mcp_write_tool_tells_the_model(memory) -> None:
    from memdir.mcp.server import MemoryTools

    reply = MemoryTools(memory).call("memory_write", {"text": "the wifi password is Corr3ctHorse"})
    assert reply["redacted"] == ["password"] and "redacted password" in reply["reason"]


def test_refuse_mode_from_the_config_refuses_the_write(workspace, isolated_env) -> None:
    (isolated_env / "config.toml").write_text(
        '[embedding]\nprovider = "fake"\n[privacy]\nsecrets = "refuse"\n', encoding="utf-8"
    )
    with Memory(workspace) as mem:
        with pytest.raises(SecretRefused, match="password"):
            mem.write("Remember: my password is hunter2-Secret!")
        assert mem.write("The staging database listens on port 5433").written
    assert "hunter2" not in (workspace / "memory").joinpath(_today()).read_text(encoding="utf-8")


def _today() -> str:
    from memdir.clock import now

    return f"{now().date().isoformat()}.md"


def test_auto_capture_redacts(workspace) -> None:
    capture = AutoCapture(Workspace(workspace))
    result = capture.consider("Remember: my password is hunter2-Secret!", now=NOW)
    assert result is not None and result.written
    text = (workspace / TODAY).read_text(encoding="utf-8")
    assert "hunter2" not in text and "[REDACTED:password]" in text


def test_flush_and_extraction_redact(workspace) -> None:
    from memdir.lifecycle.extract import extract_memories
    from memdir.lifecycle.flush import run_memory_flush
    from memdir.llm.base import Message
    from memdir.llm.fake import ScriptedLLM

    llm = ScriptedLLM()
    llm.enqueue(f"- the CI token is {GITHUB_CLASSIC}")
    ws = Workspace(workspace)
    flushed = run_memory_flush(ws, [Message("user", "hi")], llm, now=NOW)
    assert flushed.appended == 1
    llm.enqueue(
        '{"items": [{"category": "project fact", "text": "The deploy password is Tr0ub4dor&3"}]}'
    )
    report = extract_memories(ws, [Message("user", "deploy")], llm, now=NOW, embedder=None)
    assert report.results and report.results[0].written
    for rel in (TODAY, "MEMORY.md"):
        text = (workspace / rel).read_text(encoding="utf-8")
        assert GITHUB_CLASSIC not in text and "Tr0ub4dor&3" not in text


def test_session_archives_are_redacted_even_in_refuse_mode(workspace) -> None:
    from memdir.lifecycle.archive import archive_session
    from memdir.llm.base import Message

    ws = Workspace(workspace, secrets=SecretGuard("refuse"))
    result = archive_session(
        ws,
        [Message("user", f"use {GITHUB_CLASSIC} for CI"), Message("assistant", "noted")],
        session_id="s1",
        started_at=NOW,
        now=NOW,
        llm=None,
    )
    assert result is not None and "redacted GitHub token" in result.note
    assert GITHUB_CLASSIC not in (workspace / result.path).read_text(encoding="utf-8")


def test_a_workspace_config_may_not_weaken_the_check(workspace: Path) -> None:
    config = workspace / ".memdir" / "config.toml"
    config.write_text('[privacy]\nsecrets = "off"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"may not set privacy\.secrets"):
        load_config(workspace)
    config.write_text('[privacy]\nsecret_patterns = ["(a+)+$"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="secret_patterns"):
        load_config(workspace)
    config.write_text('[privacy]\nsecrets = "refuse"\n', encoding="utf-8")
    assert load_config(workspace).privacy.secrets == "refuse"
    assert Config().privacy.secrets == "redact"


# -- round 2 (issue 27): what the probe found kept, and secrets over several lines -------------


def test_a_url_password_goes_whole_and_the_user_and_host_stay() -> None:
    text = f"orders live at postgresql://admin:{DB_URL_PASSWORD}@db.internal:5432/app"
    assert SecretGuard().redact(text)[0] == (
        "orders live at postgresql://admin:[REDACTED:password in a URL]@db.internal:5432/app"
    )
    # At the end of a sentence, and with an e-mail address in the query.
    assert SecretGuard().redact(f"it is ftp://me:{DB_URL_PASSWORD}@files.lan: the NAS")[0] == (
        "it is ftp://me:[REDACTED:password in a URL]@files.lan: the NAS"
    )
    assert SecretGuard().redact("https://bot:Hu9-x!@ci.lan/hook?to=ops@acme.io")[0] == (
        "https://bot:[REDACTED:password in a URL]@ci.lan/hook?to=ops@acme.io"
    )


def test_an_aws_secret_is_found_beside_its_key_id_but_a_commit_hash_is_not() -> None:
    csv = f"Access key ID,Secret access key\n{AWS_KEY_ID},{AWS_SECRET}"
    assert SecretGuard().redact(csv)[0] == (
        "Access key ID,Secret access key\n"
        "[REDACTED:AWS access key id],[REDACTED:AWS secret access key]"
    )
    commit = "3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39"
    assert SecretGuard().redact(f"{AWS_KEY_ID} was revoked in commit {commit}")[0] == (
        f"[REDACTED:AWS access key id] was revoked in commit {commit}"
    )


@pytest.mark.parametrize(
    "keyword",
    [
        *("password", "Passwd", "passphrase", "pass code", "passcode", "pwd", "PIN", "pin code"),
        *("pin number", "credentials", "wifi pass", "db_pass", "api key", "API_SECRET"),
        *("client secret", "secret", "secret access key", "storage key", "access token"),
        *("auth token", "authorization token", "refresh token", "token"),
    ],
)
def test_every_keyword_leads_to_its_value(keyword: str) -> None:
    text, kinds = SecretGuard().redact(f"the {keyword} is Tr0ub4dor3xK9mQ2zL, noted")
    assert text.startswith(f"the {keyword} is [REDACTED:") and text.endswith("], noted")
    assert kinds in (["password"], ["secret key"])


def test_redacting_twice_changes_nothing_more() -> None:
    guard = SecretGuard()
    for text, _secret, _kind in SECRETS:
        once = guard.redact(text)[0]
        assert guard.redact(once) == (once, [])


def test_a_key_over_several_lines_is_one_secret_when_lines_are_written_one_by_one() -> None:
    lines = ["deploy key for staging:", *PEM.splitlines(), "", "Redis moved to 6380"]
    assert SecretGuard().redact_lines(lines) == [
        ("deploy key for staging:", []),
        ("[REDACTED:private key]", ["private key"]),
        ("", ["private key"]),
        ("", ["private key"]),
        ("", []),
        ("Redis moved to 6380", []),
    ]
    # Checked one line at a time, the body would not be known as a key (the general rule for
    # random-looking strings takes this line, issue 35), and the END line would be kept.
    assert [f.kind for f in SecretGuard().find(lines[2])] == ["high-entropy string"]
    assert SecretGuard().find(lines[3]) == []


def test_a_key_cut_before_its_end_line_stops_at_its_body() -> None:
    cut = "\n".join(PEM.splitlines()[:2]) + "\nkeep the rest of this note"
    assert SecretGuard().redact(cut)[0] == "[REDACTED:private key]\nkeep the rest of this note"


def test_the_flush_redacts_a_key_the_model_copied_over_several_lines(workspace) -> None:
    from memdir.lifecycle.flush import run_memory_flush
    from memdir.llm.base import Message
    from memdir.llm.fake import ScriptedLLM

    llm = ScriptedLLM()
    llm.enqueue(f"- deploy key for staging:\n{PEM}\n- Redis moved to port 6380")
    result = run_memory_flush(Workspace(workspace), [Message("user", "hi")], llm, now=NOW)
    text = (workspace / TODAY).read_text(encoding="utf-8")
    for line in PEM.splitlines()[1:]:
        assert line not in text
    assert "- [REDACTED:private key]\n" in text and "- Redis moved to port 6380\n" in text
    assert [r.redacted for r in result.written] == [(), ("private key",), ()]


def test_the_flush_in_refuse_mode_writes_no_line_of_the_key(workspace) -> None:
    from memdir.lifecycle.flush import run_memory_flush
    from memdir.llm.base import Message
    from memdir.llm.fake import ScriptedLLM

    llm = ScriptedLLM()
    llm.enqueue(f"- deploy key for staging:\n{PEM}\n- Redis moved to port 6380")
    ws = Workspace(workspace, secrets=SecretGuard("refuse"))
    result = run_memory_flush(ws, [Message("user", "hi")], llm, now=NOW)
    text = (workspace / TODAY).read_text(encoding="utf-8")
    assert "PRIVATE KEY" not in text and PEM.splitlines()[1] not in text
    assert "Redis moved to port 6380" in text
    assert len([w for w in result.warnings if "private key" in w]) == 3


def test_a_promotion_that_starts_inside_a_key_promotes_none_of_it(
    workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memdir import FakeEmbedder
    from tests.dreaming.factories import seed_recalls
    from tests.helpers import write

    note = "memory/2026-11-28.md"
    body, end = PEM.splitlines()[1:]
    write(workspace, note, f"# 2026-11-28\n\n- deploy key for staging\n{PEM}\n")
    monkeypatch.setenv("MEMDIR_NOW", NOW.isoformat())
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        inside = seed_recalls(mem.recalls, note, 5, 6, f"{body}\n{end}", until=NOW)
        whole = seed_recalls(mem.recalls, note, 3, 6, f"- deploy key for staging\n{PEM}", until=NOW)
        report = mem.dream(apply=True)
    outcomes = {o.key: o for o in report.promotion.outcomes}
    assert outcomes[inside].status == "nothing new"
    assert outcomes[whole].status == "promoted"
    text = (workspace / "MEMORY.md").read_text(encoding="utf-8")
    assert body not in text and "END RSA" not in text
    assert "- deploy key for staging [REDACTED:private key] <!-- memdir:promoted" in text


def test_writes_captures_and_archives_check_the_whole_text(memory, workspace) -> None:
    from memdir.lifecycle.archive import archive_session
    from memdir.llm.base import Message

    written = memory.write(f"the staging deploy key:\n{PEM}")
    assert written.redacted == ("private key",)
    captured = AutoCapture(Workspace(workspace)).consider(f"Remember this key:\n{PEM}", now=NOW)
    assert captured is not None and captured.redacted == ("private key",)
    archived = archive_session(
        Workspace(workspace),
        [Message("user", f"the key\n{PEM}\nand postgresql://admin:{DB_URL_PASSWORD}@db:5432/app")],
        session_id="s2",
        started_at=NOW,
        now=NOW,
        llm=None,
    )
    assert archived is not None
    for rel in (written.path, TODAY, archived.path):
        text = (workspace / rel).read_text(encoding="utf-8")
        assert kept_parts(PEM.splitlines()[1], text) == [] and "END RSA" not in text
        assert "[REDACTED:private key]" in text
    assert kept_parts(DB_URL_PASSWORD, (workspace / archived.path).read_text("utf-8")) == []
