"""memdir's entries in Claude Code's settings.json: merged in, idempotent, removed exactly."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from memdir.config.settings import HooksConfig
from memdir.errors import MemdirError
from memdir.hooks.claude_code import (
    EVENTS,
    install_hooks,
    is_memdir_hook,
    settings_path,
    uninstall_hooks,
)

EXE = ["/opt/memdir venv/bin/memdir"]  # a space: commands must be quoted
THEIRS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test:*)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}],
        "SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}
        ],
    },
}


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=4) + "\n", encoding="utf-8")


def installed_commands(path: Path) -> dict[str, list[str]]:
    """memdir's hook commands in the settings at ``path``, by event."""
    found: dict[str, list[str]] = {}
    for name, groups in json.loads(path.read_text())["hooks"].items():
        for group in groups:
            for entry in group["hooks"]:
                if is_memdir_hook(entry["command"]):
                    found.setdefault(name, []).append(entry["command"])
    return found


def test_install_writes_one_entry_per_event_naming_the_workspace(tmp_path: Path) -> None:
    path = tmp_path / "proj" / ".claude" / "settings.json"
    ws = tmp_path / "my notes"
    change = install_hooks(path, ws, config=HooksConfig(), executable=EXE)
    assert change.changed and path.is_file()
    hooks = json.loads(path.read_text())["hooks"]
    assert list(hooks) == [e.name for e in EVENTS]
    for event in EVENTS:
        (group,) = hooks[event.name]
        (entry,) = group["hooks"]
        assert entry["type"] == "command" and "matcher" not in group
        words = shlex.split(entry["command"])
        assert words == [*EXE, "hook", event.command, "--workspace", str(ws)]
        assert entry["timeout"] == event.timeout(HooksConfig())
    # The model calls are bounded below what Claude Code allows.
    assert hooks["PreCompact"][0]["hooks"][0]["timeout"] > HooksConfig().flush_timeout
    assert hooks["SessionEnd"][0]["hooks"][0]["timeout"] > HooksConfig().slug_timeout


def test_install_keeps_everything_else_and_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    write_json(path, THEIRS)
    install_hooks(path, tmp_path / "ws", config=HooksConfig(), executable=EXE)
    data = json.loads(path.read_text())
    assert data["model"] == "opus" and data["permissions"] == THEIRS["permissions"]
    assert data["hooks"]["PreToolUse"] == THEIRS["hooks"]["PreToolUse"]
    assert data["hooks"]["SessionStart"][0] == THEIRS["hooks"]["SessionStart"][0]
    assert len(data["hooks"]["SessionStart"]) == 2
    written = path.read_bytes()
    again = install_hooks(path, tmp_path / "ws", config=HooksConfig(), executable=EXE)
    assert not again.changed and path.read_bytes() == written
    # Another workspace replaces memdir's entries in place; nothing is added twice.
    moved = install_hooks(path, tmp_path / "other", config=HooksConfig(), executable=EXE)
    assert moved.changed and len(moved.removed) == len(EVENTS)
    found = installed_commands(path)
    assert all(len(found[e.name]) == 1 and "other" in found[e.name][0] for e in EVENTS)
    assert len(json.loads(path.read_text())["hooks"]["SessionStart"]) == 2


def test_uninstall_removes_exactly_memdirs_entries(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    write_json(path, THEIRS)
    install_hooks(path, tmp_path / "ws", config=HooksConfig(), executable=EXE)
    # A person added a hook of their own into memdir's group: it stays.
    data = json.loads(path.read_text())
    data["hooks"]["PreCompact"][0]["hooks"].append({"type": "command", "command": "backup.sh"})
    write_json(path, data)
    change = uninstall_hooks(path)
    assert len(change.removed) == len(EVENTS)
    left = json.loads(path.read_text())
    expected = json.loads(json.dumps(THEIRS))
    expected["hooks"]["PreCompact"] = [{"hooks": [{"type": "command", "command": "backup.sh"}]}]
    assert left == expected
    assert not uninstall_hooks(path).changed  # nothing left of memdir's


def test_uninstall_of_a_file_with_only_memdir_drops_the_hooks_key(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    install_hooks(path, tmp_path / "ws", config=HooksConfig(), executable=EXE)
    uninstall_hooks(path)
    assert json.loads(path.read_text()) == {}
    assert not uninstall_hooks(tmp_path / "missing.json").changed


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"hooks": [}', "is not valid JSON"),
        ("[1, 2]", "does not hold a JSON object"),
        ('{"hooks": []}', '"hooks" is not an object'),
        ('{"hooks": {"SessionStart": {}}}', '"hooks.SessionStart" is not a list'),
    ],
)
def test_a_settings_file_of_another_shape_is_left_alone(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "settings.json"
    path.write_text(text)
    with pytest.raises(MemdirError, match=message):
        install_hooks(path, tmp_path / "ws", config=HooksConfig(), executable=EXE)
    assert path.read_text() == text


def test_a_symlinked_settings_file_is_written_through(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "claude-settings.json"
    write_json(real, {"model": "opus"})
    link = tmp_path / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(real)
    install_hooks(link, tmp_path / "ws", config=HooksConfig(), executable=EXE)
    assert link.is_symlink() and "hooks" in json.loads(real.read_text())


def test_timeouts_follow_the_config(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    config = HooksConfig(flush_timeout=100, slug_timeout=20)
    install_hooks(path, tmp_path / "ws", config=config, executable=EXE)
    hooks = json.loads(path.read_text())["hooks"]
    assert hooks["PreCompact"][0]["hooks"][0]["timeout"] == 115
    assert hooks["SessionEnd"][0]["hooks"][0]["timeout"] == 35
    assert hooks["SessionStart"][0]["hooks"][0]["timeout"] == 15
    assert hooks["UserPromptSubmit"][0]["hooks"][0]["timeout"] == 25


@pytest.mark.parametrize(
    ("command", "ours"),
    [
        ("/home/you/.venvs/m/bin/memdir hook session-start --workspace /home/you/notes", True),
        ("memdir hook pre-compact -w ~/notes", True),
        ("'/opt/a b/python3' -m memdir hook session-end --workspace /n", True),
        ("memdir hook no-such-event", False),
        ("memdir search hook session-start", False),
        ("/usr/local/bin/other-tool hook session-start", False),
        ("echo memdir hook session-start", False),
        ("unbalanced 'quote", False),
    ],
)
def test_which_commands_are_memdirs(command: str, ours: bool) -> None:
    assert is_memdir_hook(command) is ours


def test_scopes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert settings_path("project", tmp_path / "p") == tmp_path / "p" / ".claude" / "settings.json"
    assert settings_path("user", tmp_path) == tmp_path / "home" / ".claude" / "settings.json"
