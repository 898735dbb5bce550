"""Generated inputs (hypothesis): any Markdown bytes and any file name must index, search and
print without an error, with chunk lines inside the file and no NUL in a snippet."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdir import FakeEmbedder, Memory, init_workspace
from memdir.cli import cli
from memdir.cli.common import visible
from tests.torture.conftest import TALLY

#: Characters that have broken text tools before: markup brackets, control characters, NUL,
#: CJK, combining marks, right-to-left, surrogate-free astral symbols, Markdown syntax.
_NASTY = "[]/\\`*_#<>!-|:;\"'\t\r\x00\x01\x1b\x7f\u200b\u202e\u0301你好數據庫カナ😀𝔘"
_TEXT = st.text(alphabet=st.one_of(st.sampled_from(_NASTY), st.characters()), max_size=400)
_LINES = st.lists(
    st.one_of(
        _TEXT, st.builds(lambda c, n: c * n, st.sampled_from("ab 你\x00"), st.integers(1, 5000))
    ),
    max_size=30,
)
_BYTES = st.one_of(
    _LINES.map(lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass")),
    st.binary(max_size=3000),
)
_NAME = st.text(
    alphabet=st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)),
    min_size=1,
    max_size=40,
).filter(lambda n: n not in (".", "..") and not n.startswith("."))


def _check_note(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root, _ = init_workspace(Path(tmp) / "ws")
        (root / "memory" / "gen.md").write_bytes(data)
        with Memory(root, embedder=FakeEmbedder()) as mem:
            mem.sync()
            lines = data.count(b"\n") + 1
            for chunk in mem.index.store().chunks_by_seq(list(range(1, 2000))).values():
                if chunk.path == "memory/gen.md":
                    assert 1 <= chunk.start_line <= chunk.end_line <= lines
            words = data.decode("utf-8", "replace").split()
            for hit in mem.search(" ".join(words[:3])[:200] or "x", min_score=0.0).results:
                assert "\x00" not in hit.snippet
            mem.status()
    TALLY["generated notes"] += 1


def _check_name(name: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root, _ = init_workspace(Path(tmp) / "ws")
        path = root / "memory" / f"{name}.md"
        try:
            path.write_text("# generated\nthe walrus sings at noon\n", encoding="utf-8")
        except OSError:  # a name the file system refuses (too long…): nothing to test
            return
        runner = CliRunner()
        env = {"MEMDIR_WORKSPACE": str(root)}
        for args in (["index"], ["status"], ["search", "walrus sings", "--min-score", "0"]):
            result = runner.invoke(cli, args, env=env, catch_exceptions=False)
            assert result.exit_code == 0, (args, result.output)
        assert visible(f"memory/{name}.md") in result.output
    TALLY["generated file names"] += 1


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(_BYTES)
def test_generated_markdown(data: bytes) -> None:
    _check_note(data)


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(_NAME)
def test_generated_file_names(name: str) -> None:
    _check_name(name)


@pytest.mark.torture
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(_BYTES)
def test_generated_markdown_long(data: bytes) -> None:
    _check_note(data)


@pytest.mark.torture
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(_NAME)
def test_generated_file_names_long(name: str) -> None:
    _check_name(name)


def test_bad_bytes_in_a_name_do_not_stop_the_others(tmp_path) -> None:
    root, _ = init_workspace(tmp_path / "ws")
    (root / "memory" / "good.md").write_text("the walrus sings\n", encoding="utf-8")
    for raw in (b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"a\x80b"):
        with open(os.fsencode(root / "memory") + b"/" + raw + b".md", "wb") as fh:
            fh.write(b"x\n")
    with Memory(root, embedder=FakeEmbedder()) as mem:
        mem.sync()
        assert [h.path for h in mem.search("walrus").results] == ["memory/good.md"]
        assert len([w for w in mem.status()["file_warnings"].values() if "UTF-8" in w]) == 4
