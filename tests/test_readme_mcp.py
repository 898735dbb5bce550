"""Every MCP setup the README shows starts a server that lists the tools, run as written.

The README is read, not copied: its `claude mcp add … -- CMD` lines, its `mcpServers` JSON
blocks and its MCP Inspector line give the server commands; its `memdir init` lines create the
workspaces. Each command runs with ``HOME`` in a temp folder (so ``~/notes`` is a fresh
workspace), the README's placeholder home folders (``/Users/you``, ``/home/you``) mapped there,
and ``memdir`` meaning this environment's executable. The official MCP SDK client then lists the
tools and makes a search.

With Claude Code (``MEMDIR_TEST_CLAUDE`` or ``claude`` on PATH) the README's `claude mcp add`
lines run verbatim in bash and `claude mcp list` must say "Connected" for each; with the MCP
Inspector (``MEMDIR_TEST_MCP_INSPECTOR`` or ``mcp-inspector`` on PATH) its README line runs too.
Both skip, saying why, where the client is not installed; ``.ci/run`` installs Claude Code.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.helpers import CLAUDE_CODE, node_client

README = Path(__file__).resolve().parents[1] / "README.md"
TOOLS = {"memory_search", "memory_get", "memory_write"}
PRIVATE_TOOLS = {*TOOLS, "memory_forget"}  # memory_forget is offered in private sessions only
#: Home folders the README writes in examples; they mean "your home" (the temp HOME here).
PLACEHOLDER_HOMES = ("/Users/you", "/home/you")
INSPECTOR_PREFIX = "npx @modelcontextprotocol/inspector"
HTTP_TRANSPORT = "--transport http"
README_SERVICE_PORT = "8766"
_FENCE_RE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
_COMMENT_RE = re.compile(r"\s+#\s.*$")


@dataclass(frozen=True)
class ServerCommand:
    """A server command as the README gives it."""

    origin: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, body)`` of every fenced code block."""
    return [(m.group(1), m.group(2)) for m in _FENCE_RE.finditer(text)]


def shell_lines(text: str) -> list[str]:
    """The lines of the README's bash blocks as written, without trailing ``# comments``."""
    lines = []
    for lang, body in fenced_blocks(text):
        if lang == "bash":
            for raw in body.splitlines():
                line = _COMMENT_RE.sub("", raw).strip()
                if line and not line.startswith("#"):
                    lines.append(line)
    return lines


def server_commands(text: str) -> list[ServerCommand]:
    """Every MCP server command in the README."""
    found: list[ServerCommand] = []
    for line in shell_lines(text):
        if line.startswith("claude mcp add") and HTTP_TRANSPORT in line:
            continue  # the per-user service's endpoint: tests/service/ and the test below
        if line.startswith("claude mcp add"):
            argv = shlex.split(line.split(" -- ", 1)[1])
            found.append(ServerCommand(f"`{line}`", tuple(argv)))
        elif line.startswith(INSPECTOR_PREFIX):
            words = shlex.split(line)
            argv = words[words.index("--cli") + 1 : words.index("--method")]
            found.append(ServerCommand(f"`{line}`", tuple(argv)))
    for n, (lang, body) in enumerate(fenced_blocks(text)):
        if lang != "json" or "mcpServers" not in body:
            continue
        for name, spec in json.loads(body)["mcpServers"].items():
            argv = (spec["command"], *spec.get("args", []))
            origin = f"JSON block {n}, server {name!r}"
            found.append(ServerCommand(origin, argv, spec.get("env", {})))
    return found


def memdir_executable() -> str:
    found = shutil.which("memdir", path=str(Path(sys.executable).parent))
    assert found, "no memdir executable beside this Python: install memdir into this environment"
    return found


def localise(value: str, home: Path) -> str:
    for placeholder in PLACEHOLDER_HOMES:
        value = value.replace(placeholder, str(home))
    return value


def local_argv(command: ServerCommand, home: Path) -> list[str]:
    """The command as it runs here: ``memdir`` (however the README names it) is this
    environment's executable, placeholder homes are the temp HOME."""
    exe = command.argv[0]
    if exe == "$(which memdir)" or Path(exe).name == "memdir":
        exe = memdir_executable()
    return [exe, *(localise(a, home) for a in command.argv[1:])]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A temp HOME with memdir's user config (the fake embedder keeps the servers quick)."""
    home = tmp_path / "home"
    (home / ".memdir").mkdir(parents=True)
    (home / ".memdir" / "config.toml").write_text('[embedding]\nprovider = "fake"\n')
    return home


def base_env(home: Path, *extra_bin: str) -> dict[str, str]:
    path = os.pathsep.join([str(Path(memdir_executable()).parent), *extra_bin, os.environ["PATH"]])
    return {"HOME": str(home), "PATH": path, "LANG": "C.UTF-8"}


def run_readme_init_lines(text: str, home: Path) -> list[str]:
    """Run the README's `memdir init` lines verbatim in bash; returns them."""
    lines = [line for line in shell_lines(text) if line.startswith("memdir init ~")]
    for line in lines:
        subprocess.run(["bash", "-c", line], env=base_env(home), check=True, capture_output=True)
    return lines


def test_the_readme_shows_every_kind_of_setup() -> None:
    commands = server_commands(README.read_text(encoding="utf-8"))
    origins = " ".join(c.origin for c in commands)
    assert origins.count("claude mcp add") >= 2
    assert origins.count("JSON block") >= 2
    assert INSPECTOR_PREFIX in origins
    for command in commands:
        assert command.argv[1:2] == ("serve",), command


def test_the_readme_describes_the_tools_the_server_offers() -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split("## MCP setup", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^- `(memory_\w+) \{", section, re.M)
    assert set(listed) == PRIVATE_TOOLS
    count = {3: "three", 4: "four"}
    said = f"{count[len(PRIVATE_TOOLS)]} tools ({count[len(TOOLS)]} in a shared session)"
    assert said in " ".join(section.split())


def test_every_readme_server_command_lists_the_tools(home: Path) -> None:
    text = README.read_text(encoding="utf-8")
    assert run_readme_init_lines(text, home)
    commands = server_commands(text)
    failures: dict[str, str] = {}

    async def check(command: ServerCommand) -> None:
        argv = local_argv(command, home)
        env = {**base_env(home), **{k: localise(v, home) for k, v in command.env.items()}}
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
        log = home / f"stderr-{abs(hash(command.origin))}.log"
        try:
            with log.open("w") as errlog:
                async with (
                    stdio_client(params, errlog=errlog) as (read, write),
                    ClientSession(read, write) as client,
                ):
                    await client.initialize()
                    names = {t.name for t in (await client.list_tools()).tools}
                    shared = "--scope" in argv and argv[argv.index("--scope") + 1] == "shared"
                    assert names == (TOOLS if shared else PRIVATE_TOOLS), names
                    result = await client.call_tool("memory_search", {"query": "notes"})
                    assert not result.is_error, result.content
        except Exception as exc:
            failures[command.origin] = f"{type(exc).__name__}: {exc}; stderr: {log.read_text()}"

    async def main() -> None:
        with anyio.fail_after(240):
            async with anyio.create_task_group() as group:
                for command in commands:
                    group.start_soon(check, command)

    anyio.run(main)
    assert not failures, json.dumps(failures, indent=2)


def test_serve_on_a_folder_that_is_not_a_workspace_says_memdir_init(home: Path) -> None:
    (home / "notes").mkdir()
    argv = [memdir_executable(), "serve", "--workspace", "~/notes"]
    done = subprocess.run(argv, env=base_env(home), capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "is not a memdir workspace" in done.stderr and "memdir init" in done.stderr
    assert not (home / "notes" / ".memdir").exists()


# -- real clients ---------------------------------------------------------------------------


def test_claude_code_says_connected_for_the_readme_lines(home: Path, tmp_path: Path) -> None:
    claude = node_client(*CLAUDE_CODE)
    text = README.read_text(encoding="utf-8")
    run_readme_init_lines(text, home)
    project = tmp_path / "project"
    project.mkdir()
    env = {
        **base_env(home, str(Path(claude).parent)),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    added = [line for line in shell_lines(text) if line.startswith("claude mcp add")]
    assert sum(HTTP_TRANSPORT in line for line in added) == 1
    # The HTTP line needs the per-user service: one on a free port of this test's own
    # MEMDIR_HOME (the README's 8766 may be taken on this machine), started as the README does.
    port = str(_free_port())
    memdir_home = home / ".memdir"
    memdir_home.mkdir(exist_ok=True)
    (memdir_home / "config.toml").write_text(f"[service]\nport = {port}\n")
    env.pop("MEMDIR_SERVICE", None)
    start = next(line for line in shell_lines(text) if line.startswith("memdir daemon start"))
    subprocess.run(["bash", "-c", start], cwd=project, env=env, check=True, timeout=120)
    try:
        names = []
        for line in added:
            if HTTP_TRANSPORT in line:
                names.append(shlex.split(line)[5])
                line = line.replace(f"127.0.0.1:{README_SERVICE_PORT}/", f"127.0.0.1:{port}/")
            else:
                names.append(shlex.split(line.split(" -- ")[0])[-1])
            local = line.replace("claude mcp add", f"{shlex.quote(claude)} mcp add", 1)
            subprocess.run(["bash", "-c", local], cwd=project, env=env, check=True, timeout=60)
        listed = subprocess.run(
            [claude, "mcp", "list"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
    finally:
        subprocess.run(["bash", "-c", "memdir daemon stop"], env=env, timeout=60)
    for name in names:
        assert re.search(rf"^{re.escape(name)}: .* - ✔ Connected$", listed.stdout, re.M), (
            listed.stdout + listed.stderr
        )


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_mcp_inspector_lists_the_tools_with_the_readme_line(home: Path) -> None:
    inspector = node_client("MEMDIR_TEST_MCP_INSPECTOR", "mcp-inspector", INSPECTOR_PREFIX[4:])
    text = README.read_text(encoding="utf-8")
    run_readme_init_lines(text, home)
    (line,) = [line for line in shell_lines(text) if line.startswith(INSPECTOR_PREFIX)]
    local = line.replace(INSPECTOR_PREFIX, shlex.quote(inspector), 1)
    env = base_env(home, str(Path(inspector).parent))
    done = subprocess.run(
        ["bash", "-c", local], env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    assert {t["name"] for t in json.loads(done.stdout)["tools"]} == PRIVATE_TOOLS
