"""Chunk texts read back from the files (an engine that does not keep them): spans, columns,
and a changed file read again while an unchanged one is not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import memdir.index.texts as texts_module
from memdir.index.base import TextSpan
from memdir.index.texts import ChunkTextReader
from memdir.workspace import Workspace
from tests.helpers import write


def test_spans_columns_and_missing_lines(workspace: Path) -> None:
    write(workspace, "memory/a.md", "first\r\nsecond line\nthird\n")
    read = ChunkTextReader(Workspace(workspace))
    spans = [TextSpan(1, 2), TextSpan(2, 2, 3, 7), TextSpan(3, 9)]
    assert read("memory/a.md", spans) == ["first\nsecond line", "ond ", None]
    assert read("memory/gone.md", [TextSpan(1, 1)]) == [None]
    assert read("../outside.md", [TextSpan(1, 1)]) == [None]


def test_an_unchanged_file_is_read_once_and_a_changed_one_again(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(workspace, "memory/a.md", "the heron\n")
    reads: list[Path] = []
    real = texts_module.read_regular_file

    def counting(location: Path) -> bytes:
        reads.append(location)
        return real(location)

    monkeypatch.setattr(texts_module, "read_regular_file", counting)
    read = ChunkTextReader(Workspace(workspace), cached_files=1)
    for _ in range(3):
        assert read("memory/a.md", [TextSpan(1, 1)]) == ["the heron"]
    assert len(reads) == 1
    path.write_text("the egret\n", encoding="utf-8")  # same size: the time tells
    later = path.stat().st_mtime_ns + 1_000_000_000
    os.utime(path, ns=(later, later))
    assert read("memory/a.md", [TextSpan(1, 1)]) == ["the egret"]
    write(workspace, "memory/b.md", "another\n")
    assert read("memory/b.md", [TextSpan(1, 1)]) == ["another"]  # pushes a.md out
    assert read("memory/a.md", [TextSpan(1, 1)]) == ["the egret"]
    assert len(reads) == 4
