"""Looking at the files a watcher saw change, one by one (memdir.index.changes): the same
entries and the same verdicts as a look at every file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import memdir.index.changes as changes
from memdir.index.changes import file_entry, scan_paths
from memdir.index.sync import scan_dirty
from memdir.workspace.layout import Workspace
from tests.helpers import write
from tests.index.conftest import Backend


def _messy_tree(root: Path, outside: Path) -> list[str]:
    """Every kind of entry the walk must take or leave; returns paths to ask about."""
    write(root, "MEMORY.md", "# Memory\n")
    for rel in (
        "memory/a.md",
        "memory/sub/b.MD",
        "memory/sub/notes.txt",
        "memory/.hidden/c.md",
        "memory/.dotfile.md",
        "memory/d1/d2/d3/deep.md",
        "memory/d1/d2/shallow.md",
        "skills/fly/SKILL.md",
        "notes/extra-file.md",
        "notes/plain.md",
        "archive/x/y.md",
        "archive/.git/z.md",
    ):
        write(root, rel, f"{rel}\n")
    write(outside, "e/outside.md", "outside\n")
    (root / "memory" / "link.md").symlink_to(root / "memory" / "a.md")
    (root / "memory" / "linkdir").symlink_to(root / "memory" / "sub")
    os.mkfifo(root / "memory" / "pipe.md")
    (root / "memory" / "dir.md").mkdir()
    bad = os.fsencode(root / "memory") + b"/\xff-bad.md"
    with open(bad, "wb") as fh:
        fh.write(b"x\n")
    asked = [os.fsdecode(bad)]
    for folder, dirs, files in os.walk(root):  # does not follow symlinks
        asked += [os.path.join(folder, name) for name in files + dirs]
    for folder, _, files in os.walk(outside):
        asked += [os.path.join(folder, name) for name in files]
    asked += [
        str(root / "memory" / "linkdir" / "b.MD"),  # through a symlinked folder
        str(root / "memory" / "gone.md"),
        str(root / "MEMORY.md"),
        str(root / ".memdir" / "x.md"),
        str(outside / "nowhere.md"),
    ]
    return asked


def test_each_file_gets_the_entry_a_look_at_every_file_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(changes, "MAX_FOLDER_DEPTH", 2)
    monkeypatch.setattr("memdir.workspace.filewalk.MAX_FOLDER_DEPTH", 2)
    root, outside = tmp_path / "ws", tmp_path / "outside"
    asked = _messy_tree(root, outside)
    extras = ("notes/extra-file.md", "archive", str(outside / "e"), "memory/sub")
    workspace = Workspace(root, extra_paths=extras)
    listed = {entry.location: entry for entry in workspace.iter_files()}
    assert {e.path for e in listed.values()} >= {
        "MEMORY.md",
        "memory/a.md",
        "memory/.dotfile.md",
        "memory/d1/d2/shallow.md",
        "notes/extra-file.md",
        "archive/x/y.md",
        str(outside / "e" / "outside.md"),
    }
    for location in asked:
        assert file_entry(workspace, location) == listed.get(location), location
    assert len(asked) > 30


def test_the_changed_files_get_the_verdict_a_full_look_gives(
    backend: Backend, workspace: Path
) -> None:
    mgr = backend.synced_notes(workspace, 6)
    store = mgr.store()
    write(workspace, "memory/n1.md", "note 1, edited\n")
    (workspace / "memory" / "n2.md").unlink()
    (workspace / "memory" / "n3.md").rename(workspace / "memory" / "renamed.md")
    write(workspace, "memory/new/fresh.md", "fresh\n")
    write(workspace, "memory/ignored.txt", "not markdown\n")
    touched = [
        str(workspace / p)
        for p in (
            "memory/n1.md",
            "memory/n2.md",
            "memory/n3.md",
            "memory/renamed.md",
            "memory/new/fresh.md",
            "memory/ignored.txt",
            "memory/n4.md",  # named but unchanged
        )
    ]
    full = scan_dirty(store, mgr.workspace)
    some = scan_paths(store, mgr.workspace, touched)
    assert [e.path for e in some.changed] == sorted(e.path for e in full.changed)
    assert some.changed == tuple(sorted(full.changed, key=lambda e: e.path))
    assert some.deleted == full.deleted == ("memory/n2.md", "memory/n3.md")
    assert not scan_paths(store, mgr.workspace, [str(workspace / "memory" / "n5.md")])
    assert store.file_rows(["memory/n1.md", "memory/nope.md"]).keys() == {"memory/n1.md"}
