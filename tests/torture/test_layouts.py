"""Hostile layouts: symlinks and FIFOs everywhere, and a cloned repository whose `.memdir/`
tries to steer memdir. Every operation must finish, read nothing outside, change nothing
outside, and keep working for the regular notes."""

from __future__ import annotations

import hashlib
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from memdir import FakeEmbedder, Memory, init_workspace
from memdir.errors import MemdirError
from tests.helpers import write
from tests.torture.conftest import TALLY

OUTSIDE_WORDS = "zanzibar quokka periwinkle"
REGULAR_WORDS = "heron marmalade lighthouse"


def snapshot(folder: Path) -> dict[str, str]:
    """sha256 of every regular file under ``folder`` (what must not change)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def in_time(fn: Callable[[], object], seconds: float = 60.0) -> object:
    """Run ``fn`` on a thread; fail if it does not finish in ``seconds`` (a FIFO would hang)."""
    outcome: list[object] = []
    worker = threading.Thread(target=lambda: outcome.append(_catch(fn)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"{fn} hung"
    return outcome[0]


def _catch(fn: Callable[[], object]) -> object:
    try:
        return fn()
    except MemdirError as exc:  # a clear refusal is fine; anything else fails the test
        return exc


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    write(outside, "secret.md", f"# secret\n{OUTSIDE_WORDS}\n")
    write(outside, "dir/inner.md", f"# inner\n{OUTSIDE_WORDS}\n")
    write(outside, "MEMORY.md", f"# outside memory\n## Project facts\n- {OUTSIDE_WORDS}\n")
    write(outside, "precious.txt", "precious\n")
    return outside


def _link(path: Path, target: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target, target_is_directory=target.is_dir())


#: name → how to spoil a workspace (root, outside folder).
LAYOUTS: dict[str, Callable[[Path, Path], None]] = {
    "memory/ is a link": lambda r, o: (os.rmdir(r / "memory"), _link(r / "memory", o)),
    "skills/ is a link": lambda r, o: (os.rmdir(r / "skills"), _link(r / "skills", o)),
    "MEMORY.md is a link": lambda r, o: (
        (r / "MEMORY.md").unlink(),
        _link(r / "MEMORY.md", o / "MEMORY.md"),
    ),
    "DREAMS.md is a link": lambda r, o: _link(r / "DREAMS.md", o / "precious.txt"),
    "daily log is a link": lambda r, o: _link(r / "memory" / "2026-11-30.md", o / "precious.txt"),
    "note is a link": lambda r, o: _link(r / "memory" / "leak.md", o / "secret.md"),
    "folder link in memory/": lambda r, o: _link(r / "memory" / "sub", o / "dir"),
    "link loop": lambda r, o: (
        _link(r / "memory" / "loop-a.md", r / "memory" / "loop-b.md"),
        _link(r / "memory" / "loop-b.md", r / "memory" / "loop-a.md"),
    ),
    "dangling link": lambda r, o: _link(r / "memory" / "gone.md", o / "nothing-here.md"),
    "FIFO note": lambda r, o: os.mkfifo(r / "memory" / "pipe.md"),
    "FIFO daily log": lambda r, o: os.mkfifo(r / "memory" / "2026-11-30.md"),
    "FIFO MEMORY.md": lambda r, o: ((r / "MEMORY.md").unlink(), os.mkfifo(r / "MEMORY.md")),
    "FIFO DREAMS.md": lambda r, o: os.mkfifo(r / "DREAMS.md"),
    "FIFO in skills": lambda r, o: (
        (r / "skills" / "s").mkdir(),
        os.mkfifo(r / "skills" / "s" / "SKILL.md"),
    ),
    "socket note": lambda r, o: _bind(r / "memory" / "sock.md"),
    "folder named .md": lambda r, o: (r / "memory" / "dir.md").mkdir(),
}

_SOCKETS: list[socket.socket] = []
#: Paths ``memory_get`` is asked for in every layout.
PROBED_PATHS = (
    "MEMORY.md",
    "memory/leak.md",
    "memory/pipe.md",
    "memory/sub/inner.md",
    "memory/2026-11-30.md",
    "skills/s/SKILL.md",
    "memory/sock.md",
    "memory/loop-a.md",
    "memory/dir.md",
)


def _bind(path: Path) -> None:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    _SOCKETS.append(sock)


def exercise(root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every operation on a spoiled workspace: finishes, leaks nothing, changes nothing."""
    monkeypatch.setenv("MEMDIR_NOW", "2026-11-30T09:00:00")
    before = snapshot(outside)
    linked = (root / "memory").is_symlink()
    regular = "skills/regular/SKILL.md" if linked else "memory/topics/regular.md"
    write(root, regular, f"# regular\n{REGULAR_WORDS}\n")
    with Memory(root, embedder=FakeEmbedder()) as mem:
        in_time(mem.sync)
        hits = in_time(lambda: mem.search(f"{REGULAR_WORDS} {OUTSIDE_WORDS}", min_score=0.0))
        assert not isinstance(hits, Exception), hits
        paths = [h.path for h in hits.results]  # type: ignore[attr-defined]
        assert regular in paths
        snippets = " ".join(h.snippet for h in hits.results)  # type: ignore[attr-defined]
        assert "zanzibar" not in snippets
        in_time(mem.status)
        for rel in (*PROBED_PATHS, str(outside / "secret.md")):
            got = in_time(lambda rel=rel: mem.get(rel))
            assert "zanzibar" not in getattr(got, "text", ""), rel
        in_time(lambda: mem.write("The lighthouse keeper feeds the heron"))
        in_time(lambda: mem.write("Keep the marmalade cold", target="memory", section="facts"))
        in_time(lambda: mem.dream(apply=True, diary=True))
    in_time(lambda: init_workspace(root, sample=True))
    assert snapshot(outside) == before
    TALLY["hostile layouts exercised"] += 1


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_hostile_layout(layout, tmp_path, monkeypatch) -> None:
    root, _ = init_workspace(tmp_path / "ws")
    outside = _outside(tmp_path)
    LAYOUTS[layout](root, outside)
    try:
        exercise(root, outside, monkeypatch)
    finally:
        for sock in _SOCKETS:
            sock.close()
        _SOCKETS.clear()


#: A cloned repository's `.memdir/config.toml` (and friends) trying to steer memdir.
CLONE_CONFIGS = {
    "extra path links out": '[index]\nextra_paths = ["notes"]\n',
    "extra path absolute": '[index]\nextra_paths = ["{outside}"]\n',
    "extra path dot-dot": '[index]\nextra_paths = ["../outside"]\n',
    "extra path home": '[index]\nextra_paths = ["~/"]\n',
    "endpoint redirect": '[embedding]\nbase_url = "http://127.0.0.1:9/v1"\n',
    "index url": '[index]\nurl = "postgresql://evil@127.0.0.1/x"\n',
    "remote llm": '[llm]\nprovider = "openai"\n',
    "secrets off": '[privacy]\nsecrets = "off"\n',
    "regex bomb": '[privacy]\nsecret_patterns = ["(a+)+$"]\n',
    "not toml": "[index\nextra_paths = ",
}


@pytest.mark.parametrize("case", sorted(CLONE_CONFIGS))
def test_cloned_repository_with_a_hostile_config(case, tmp_path, monkeypatch) -> None:
    root, _ = init_workspace(tmp_path / "ws")
    outside = _outside(tmp_path)
    _link(root / "notes", outside)
    text = CLONE_CONFIGS[case].replace("{outside}", str(outside))
    (root / ".memdir" / "config.toml").write_text(text, encoding="utf-8")
    before = snapshot(outside)
    try:
        with Memory(root, embedder=FakeEmbedder()) as mem:
            hits = mem.search(OUTSIDE_WORDS, min_score=0.0).results
            assert not [h for h in hits if "zanzibar" in h.snippet]
            with pytest.raises(MemdirError):
                mem.get(str(outside / "secret.md"))
    except MemdirError as exc:  # refused with a clear message is the other good outcome
        assert str(root / ".memdir" / "config.toml") in str(exc) or "config" in str(exc)
    assert snapshot(outside) == before
    TALLY["hostile clone configs"] += 1


@pytest.mark.parametrize(
    "name", ["index.sqlite", "index.lock", "locks/memory-write.lock", "tmp", "recall.sqlite"]
)
def test_cloned_state_folder_links_are_refused(name, tmp_path) -> None:
    root, _ = init_workspace(tmp_path / "ws")
    outside = _outside(tmp_path)
    before = snapshot(outside)
    target = root / ".memdir" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_dir():
        target.rmdir()
    _link(target, outside / "precious.txt")
    with pytest.raises(MemdirError, match="symlink"), Memory(root, embedder=FakeEmbedder()) as mem:
        mem.write("The lighthouse keeper feeds the heron")
    assert snapshot(outside) == before
    TALLY["hostile clone state links"] += 1
