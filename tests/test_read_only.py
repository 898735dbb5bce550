"""A read-only workspace, and files a person made read-only (issue 27).

Every writer refuses with one :class:`~memdir.errors.ReadOnly` error naming what cannot be
written, before anything is written; reading goes on. The workspace cases run memdir in a
subprocess where writing really fails (a read-only bind mount, or root without the capability
to ignore modes: :mod:`tests.read_only`); a file's mode is read, not tried, so those cases run
in process as root too.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from memdir import FakeEmbedder, Memory, init_workspace
from memdir.audit.seam import pending_count
from memdir.errors import ReadOnly
from tests.read_only import as_owner_only, read_only_mount

FACT = "The walrus colony sleeps on pier seven every winter"


@pytest.fixture
def ws(tmp_path: Path, isolated_env: Path) -> Path:
    """A workspace with one fact in today's daily log and the same fact in MEMORY.md, both
    written by memdir (so ``forget`` may remove them)."""
    (isolated_env / "config.toml").write_text('[embedding]\nprovider = "fake"\n', encoding="utf-8")
    root, _ = init_workspace(tmp_path / "ws", "en")
    with Memory(root, embedder=FakeEmbedder()) as memory:
        memory.write(FACT)
        memory.write(FACT, target="memory", section="facts")
    return root


def snapshot(root: Path, *, state: bool = True) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root``, ``.memdir/`` too unless ``state`` is False: bytes and mode."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not path.is_symlink() and (state or rel.split("/")[0] != ".memdir"):
            out[rel] = (path.read_bytes(), path.stat().st_mode)
    return out


def daily(root: Path) -> Path:
    return next((root / "memory").glob("*.md"))


# -- files a person made read-only (the mode is read: this holds for root too) ----------------


def test_a_read_only_memory_md_is_not_replaced(ws: Path) -> None:
    memory_md = ws / "MEMORY.md"
    memory_md.chmod(0o444)
    before = snapshot(ws)
    with Memory(ws, embedder=FakeEmbedder()) as memory:
        with pytest.raises(ReadOnly, match=r"MEMORY\.md is read-only \(mode 0444\)") as caught:
            memory.write("The heron nests by the pond", target="memory", section="lessons")
        assert "chmod u+w" in str(caught.value) and "wrote nothing" in str(caught.value)
        assert pending_count(memory.workspace) == 0  # refused before the journal, too
        with pytest.raises(ReadOnly, match=r"MEMORY\.md is read-only"):
            memory.dream(apply=True)
        # The daily log is not read-only: writing there still works.
        assert memory.write("The heron nests by the pond").written
    after = snapshot(ws)
    assert after["MEMORY.md"] == before["MEMORY.md"]
    assert oct(memory_md.stat().st_mode & 0o777) == "0o444"


def test_a_read_only_daily_log_is_not_appended_to(ws: Path) -> None:
    log = daily(ws)
    log.chmod(0o444)
    before = log.read_bytes()
    with (
        Memory(ws, embedder=FakeEmbedder()) as memory,
        pytest.raises(ReadOnly, match=rf"{log.name} is read-only"),
    ):
        memory.write("The heron nests by the pond")
    assert log.read_bytes() == before


def test_forget_changes_every_file_or_none(ws: Path) -> None:
    """One of the two files holding the lines is read-only: neither is changed (not the daily
    log first, then an error on MEMORY.md)."""
    with Memory(ws, embedder=FakeEmbedder()) as memory:
        preview = memory.forget(FACT)
        paths = {"MEMORY.md", daily(ws).relative_to(ws).as_posix()}
        assert {line.path for line in preview.lines} == paths
        (ws / "MEMORY.md").chmod(0o444)
        before = snapshot(ws, state=False)
        with pytest.raises(ReadOnly, match=r"MEMORY\.md is read-only"):
            memory.forget(FACT, apply=True)
        assert pending_count(memory.workspace) == 0
    assert snapshot(ws, state=False) == before


# -- a read-only workspace, for real ----------------------------------------------------------


def run_cli(prefix: list[str], root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [*prefix, sys.executable, "-m", "memdir", "-w", str(root), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=os.environ)


WRITERS = (
    ("remember", "The heron nests by the pond"),
    ("remember", "-s", "facts", "The heron nests by the pond"),
    ("forget", FACT, "--apply", "--force"),
    ("dream", "--apply", "--diary"),
)


def check_every_writer_refuses(prefix: list[str], root: Path, cause: str) -> None:
    before = snapshot(root)
    for args in WRITERS:
        result = run_cli(prefix, root, *args)
        assert result.returncode == 1, (args, result.stdout, result.stderr)
        error = result.stderr.strip()
        assert error.startswith(f"memdir: error: workspace {root} is read-only:"), (args, error)
        assert cause in error and "wrote nothing" in error, (args, error)
        assert "internal error" not in error and "Traceback" not in error
    # Reading still works, from the fallback index under $MEMDIR_HOME.
    found = run_cli(prefix, root, "search", "walrus colony pier")
    assert found.returncode == 0 and "pier seven" in found.stdout, found.stderr
    assert run_cli(prefix, root, "log").returncode == 0
    assert snapshot(root) == before


def test_every_writer_refuses_on_a_read_only_mount(ws: Path) -> None:
    """The probe: ``memdir remember`` on a read-only mount said "internal error: OSError: [Errno
    30] Read-only file system: …/memory-write.lock"."""
    check_every_writer_refuses(read_only_mount(ws), ws, "on a read-only file system")


def test_every_writer_refuses_a_folder_made_read_only(ws: Path) -> None:
    """``chmod -R a-w`` on the workspace, memdir run as a user bound by modes (as root: without
    ``CAP_DAC_OVERRIDE``)."""
    prefix = as_owner_only()
    folders = [ws, *(p for p in ws.rglob("*") if p.is_dir())]
    for folder in folders:
        folder.chmod(0o555)
    try:
        check_every_writer_refuses(prefix, ws, f"{ws} is not writable (mode 0555)")
    finally:
        for folder in folders:
            folder.chmod(0o755)


def test_memory_write_over_mcp_says_the_workspace_is_read_only(
    ws: Path, isolated_env: Path
) -> None:
    check_mcp_write_refused(read_only_mount(ws), ws, isolated_env)


def check_mcp_write_refused(prefix: list[str], ws: Path, home: Path) -> None:
    """``memory_write`` through a real ``memdir serve`` run under ``prefix``: a tool error
    saying the workspace is read-only; a search still works; nothing changes."""
    command = [*prefix, sys.executable, "-m", "memdir", "--workspace", str(ws), "serve"]
    params = StdioServerParameters(
        command=command[0],
        args=command[1:],
        env={"MEMDIR_HOME": str(home), "PATH": os.environ.get("PATH", "")},
    )
    before = snapshot(ws)

    async def main() -> None:
        with (home / "server-stderr.log").open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as client,
            ):
                with anyio.fail_after(90):
                    await client.initialize()
                    result = await client.call_tool("memory_write", {"text": "The heron nests"})
                    message = result.content[0].text  # type: ignore[union-attr]
                    assert result.is_error and f"workspace {ws} is read-only" in message
                    assert "internal error" not in message
                    found = await client.call_tool("memory_search", {"query": "walrus pier"})
                    assert not found.is_error

    anyio.run(main)
    assert snapshot(ws) == before


def test_the_read_only_helpers_fail_for_real(tmp_path: Path) -> None:
    """The prefixes do what the tests above rely on: a write in the folder fails."""
    folder = tmp_path / "f"
    folder.mkdir()
    touch = ["sh", "-c", f"touch {folder}/x"]
    assert subprocess.run([*read_only_mount(folder), *touch], capture_output=True).returncode
    folder.chmod(0o555)
    try:
        assert subprocess.run([*as_owner_only(), *touch], capture_output=True).returncode
    finally:
        folder.chmod(0o755)
    assert not (folder / "x").exists()
