"""A client's command run in the service: ``memdir search|get|remember|status|hook`` with the
client's arguments, streams and terminal, over the warm workspace.

The request (:func:`memdir.service.protocol.encode_request`) carries the arguments (every workspace
already absolute), the working directory, the environment, whether stdout and stderr are
terminals and their size, and stdin. The command runs through the same click code as in a new
process, with the streams captured (:mod:`memdir.service.capture`), the consoles built from
the client's environment (colours, width) and :func:`memdir.cli.common.open_memory` lending
the warm :class:`~memdir.memory.facade.Memory`. The client prints what comes back byte for byte.

The service declines (the client then runs the command itself, with the same result) when the
client's environment differs from its own in a variable memdir reads (:func:`env_differences`:
``MEMDIR_*``, a provider's keys and endpoints, proxies, ``TZ``, a variable the config names
with ``env:``), when the command is not one it runs, or when the request is not one it reads.
"""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import os
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from memdir.cli.common import CLIENT_ENV, LENDER
from memdir.config.settings import Config
from memdir.errors import MemdirError
from memdir.memory.facade import Memory
from memdir.service.capture import captured
from memdir.service.pool import Pool
from memdir.service.protocol import PROTOCOL, SERVED, build_id, command_of, encode_answer

#: Variables that never decide what a served command does (the client handled them, or they
#: only say how to reach the service).
_IGNORED = frozenset({"MEMDIR_HOME", "MEMDIR_WORKSPACE", "MEMDIR_SERVICE", "MEMDIR_TOKEN"})
_PREFIXES = (
    "MEMDIR_", "OPENAI_", "ANTHROPIC_", "OLLAMA_", "GEMINI_", "GOOGLE_", "AZURE_", "COHERE_",
    "VOYAGE_", "JINA_", "HF_", "PG",
)  # fmt: skip
_NAMES = frozenset(
    {"TZ", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "SSL_CERT_FILE",
     "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "HOME", "XDG_CONFIG_HOME",
     "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM", "PYTHONHASHSEED"}
)  # fmt: skip
#: Which memdir the service runs (a client of another build is declined).
BUILD = build_id()


#: Seconds a command waits for its workspace held by another call before the service declines
#: it (the client then runs it itself rather than wait).
BUSY_S = 5.0


class Declined(Exception):
    """The service does not run this request; the client runs it itself."""


@dataclass(frozen=True)
class CliRequest:
    argv: list[str]
    cwd: str
    env: dict[str, str]
    stdout_tty: bool
    stderr_tty: bool
    columns: int
    lines: int
    stdin: bytes
    #: stdout's and stderr's encoding and errors handler in the client.
    io: tuple[str, str, str, str] = ("utf-8", "strict", "utf-8", "backslashreplace")
    build: str = ""

    @property
    def workspace(self) -> Path:
        """The workspace the arguments name (the client always names one)."""
        path = ""
        take = False
        for arg in self.argv:
            if take:
                path, take = arg, False
            elif arg in ("-w", "--workspace"):
                take = True
            elif arg.startswith("--workspace="):
                path = arg.split("=", 1)[1]
            elif arg.startswith("-w") and not arg.startswith("--") and len(arg) > 2:
                path = arg[2:]
            elif arg == "--":
                break
        if not path:
            raise Declined("no workspace named")
        return Path(path)

    def console_env(self) -> dict[str, str]:
        """The client's environment for the consoles, its terminal size included."""
        env = dict(self.env)
        # No terminal in the client: the size rich falls back to there, not the service's.
        env.setdefault("COLUMNS", str(self.columns if self.columns > 0 else 80))
        env.setdefault("LINES", str(self.lines if self.lines > 0 else 25))
        return env


def decode_request(body: bytes) -> CliRequest:
    """Read a request body (see :func:`memdir.service.protocol.encode_request`).

    Raises:
        Declined: it is not one.
    """
    first, sep, rest = body.partition(b"\n")
    if first != PROTOCOL or not sep:
        raise Declined("not a memdir-cli/1 request")
    try:
        parts = rest.split(b"\0")
        cwd, terminal = parts[0].decode("utf-8", "surrogateescape"), parts[1].decode()
        io, build = tuple(parts[2].decode().split(":")), parts[3].decode()
        count = int(parts[4])
        argv = [p.decode("utf-8", "surrogateescape") for p in parts[5 : 5 + count]]
        at = 5 + count
        nvars = int(parts[at])
        pairs = [p.decode("utf-8", "surrogateescape") for p in parts[at + 1 : at + 1 + nvars]]
        stdin = b"\0".join(parts[at + 1 + nvars :])
        flags, columns, lines = terminal.split(":")
    except (IndexError, ValueError, UnicodeDecodeError) as exc:
        raise Declined(f"unreadable request: {exc}") from exc
    if len(pairs) != nvars or len(flags) != 2 or len(io) != 4:
        raise Declined("unreadable request: truncated")
    for encoding in io[0::2]:
        try:
            codecs.lookup(encoding)
        except LookupError as exc:
            raise Declined(f"unknown encoding {encoding!r}") from exc
    env = dict(pair.split("=", 1) for pair in pairs if "=" in pair)
    return CliRequest(
        argv,
        cwd,
        env,
        flags[0] == "1",
        flags[1] == "1",
        int(columns),
        int(lines),
        stdin,
        io=(io[0], io[1], io[2], io[3]),
        build=build,
    )


def env_differences(
    client: Mapping[str, str], service: Mapping[str, str], config: Config | None = None
) -> list[str]:
    """The variables memdir reads whose values differ between the client and the service."""
    named = referenced_env(config) if config is not None else set()

    def relevant(name: str) -> bool:
        if name in _IGNORED:
            return False
        return name.upper() in _NAMES or name.startswith(_PREFIXES) or name in named

    names = {n for n in (*client, *service) if relevant(n)}
    return sorted(n for n in names if client.get(n) != service.get(n))


def referenced_env(config: Config) -> set[str]:
    """The variables the config names with ``env:VAR``."""
    names: set[str] = set()
    for section in dataclasses.fields(config):
        value = getattr(config, section.name)
        if not dataclasses.is_dataclass(value):
            continue
        for item in dataclasses.fields(value):
            setting = getattr(value, item.name)
            if isinstance(setting, str) and setting.startswith("env:"):
                names.add(setting[4:])
    return names


def run_command(pool: Pool, request: CliRequest) -> bytes:
    """Run the request's command; the answer body (exit code, stdout, stderr).

    Raises:
        Declined: the service does not run it (see the module's docstring).
    """
    if request.build != BUILD:
        raise Declined(f"the client runs memdir {request.build}, the service {BUILD}")
    if command_of(request.argv) not in SERVED:
        raise Declined(f"not a command the service runs: {request.argv[:3]}")
    workspace = request.workspace
    try:
        warm = pool.get(workspace)
    except Exception as exc:  # not a workspace, cannot open: the client's own run says why
        raise Declined(f"{workspace}: {exc}") from exc
    differ = env_differences(request.env, os.environ, warm.memory.config)
    if differ:
        raise Declined("the environment differs: " + ", ".join(differ))
    from memdir.cli.main import cli

    try:
        lent = pool.lend(workspace, timeout=BUSY_S)
        memory = lent.__enter__()
    except MemdirError as exc:  # another call holds it: the client does not wait for it
        raise Declined(str(exc)) from exc
    env_token = CLIENT_ENV.set(request.console_env())
    lender_token = LENDER.set(partial(_lend, pool, workspace, memory))
    try:
        with captured(
            request.stdin,
            stdout_tty=request.stdout_tty,
            stderr_tty=request.stderr_tty,
            io=request.io,
        ) as streams:
            code = _invoke(cli, request.argv)
    finally:
        LENDER.reset(lender_token)
        CLIENT_ENV.reset(env_token)
        lent.__exit__(None, None, None)
    return encode_answer(code, streams.output["stdout"], streams.output["stderr"])


def _lend(
    pool: Pool, workspace: Path, held: Memory, path: Path, scope: str
) -> AbstractContextManager[Memory]:
    """What :func:`memdir.cli.common.open_memory` gets in the service: the Memory the request
    already holds (its workspace's lock taken), or another workspace's, lent as usual."""
    if scope == "private" and path == workspace:
        return contextlib.nullcontext(held)
    return pool.lend(path, scope)


def _invoke(cli: object, argv: list[str]) -> int:
    """What ``memdir <argv>`` exits with, as a process would (click's standalone mode)."""
    import sys

    try:
        cli.main(args=argv, prog_name="memdir", standalone_mode=True)  # type: ignore[attr-defined]
    except SystemExit as exc:
        if exc.code is None:
            return 0
        if isinstance(exc.code, int):
            return exc.code
        print(exc.code, file=sys.stderr)
        return 1
    return 0
