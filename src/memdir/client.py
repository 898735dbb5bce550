"""The ``memdir`` executable: hand a command to the per-user service when it runs, else run it here.

A cold ``memdir search`` or Claude Code hook pays for Python, the model, jieba's dictionary and
the index on every call (1–4 s); the service (:mod:`memdir.service`, ``memdir daemon start``)
keeps them warm. This module is the fast path in front of the real command line: for the
commands the service runs (:data:`SERVED`) it sends the arguments, the working directory, the
environment and (for ``hook``) stdin to ``POST /v1/cli`` and prints what comes back, byte for
byte, with the exit code. Anything else, or a service that is not running, does not answer in
time or declines (another environment, another version), runs the command in this process as
before (:func:`memdir.cli.main.main`): the output is the same either way. A ``hook`` that ran
here starts a service in the background for the next ones (``[service] autostart``).
``MEMDIR_SERVICE=off`` keeps every command in this process.

It is imported at every start, so it imports almost nothing: no click, no json, no http.client
(``_socket`` and a hand-written HTTP/1.1 request over loopback; the body is the small framed
format of :func:`encode_request`, not JSON). docs/design.md#the-per-user-service.
"""

from __future__ import annotations

import os
import sys

from memdir.service.protocol import (
    ACK,
    ANSWER_TIMEOUT_S,
    DECLINED,
    HOOK_ANSWER_TIMEOUT_S,
    MAX_STDIN_BYTES,
    OFF_VALUES,
    SERVED,
    build_id,
    command_of,
    decode_answer,
    encode_request,
    memdir_home,
    post,
    read_endpoint,
)


def main() -> None:
    """Console-script entry point: the service's answer, or the command run here."""
    argv = sys.argv[1:]
    if command_of(argv) == "hook" and DETACH in argv and _detached_parent():
        return  # the child goes on with the hook; Claude Code has its answer (nothing) now
    use_service = os.environ.get("MEMDIR_SERVICE", "").strip().lower() not in OFF_VALUES
    if use_service:
        code = run_through_service(argv)
        if code is not None:
            sys.exit(code)
    from memdir.cli.main import main as run_here

    if use_service and command_of(argv) == "hook":
        # A Claude Code hook without a service: start one in the background
        # (``[service] autostart``) that stops when idle, so the next hooks of the session
        # are answered warm; this one runs here meanwhile.
        from memdir.service.daemon import start_quietly

        start_quietly()
    run_here()


#: ``memdir hook EVENT --detach``: answer at once, run the hook in the background.
DETACH = "--detach"


def _detached_parent() -> bool:
    """For ``hook … --detach``: read the hook's input, then fork; True in the parent, which
    ends at once, False in the child, which goes on in a session of its own with its output
    thrown away. Claude Code gives a plugin's SessionEnd hooks 1.5 s before it cancels them
    (docs/design.md#interfaces), less than an archive with its model call takes. Where there
    is no fork, the hook runs in this process."""
    if not hasattr(os, "fork"):
        return False
    try:
        data = sys.stdin.buffer.read(MAX_STDIN_BYTES) if sys.stdin is not None else b""
    except (OSError, ValueError):
        data = b""
    sys.stdin = _Replay(data)
    sys.stdout.flush()
    if os.fork():
        return True
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # Claude Code waits for the hook's stdout and stderr to close
        os.dup2(devnull, fd)
    os.close(devnull)
    return False


def run_through_service(argv: list[str]) -> int | None:
    """Run ``argv`` in the service; its exit code, or None to run it here instead."""
    request = plan_request(argv)
    if request is None:
        return None
    where = read_endpoint()
    if where is None:
        return None
    sock, token = where
    timeout = ANSWER_TIMEOUT_S
    if command_of(argv) == "hook":
        event = next((a for a in argv if a in HOOK_ANSWER_TIMEOUT_S), "")
        timeout = HOOK_ANSWER_TIMEOUT_S.get(event, ANSWER_TIMEOUT_S)
    try:
        status, body = post(sock, token, "/v1/cli", request, timeout=timeout)
    except OSError:
        return None
    except KeyboardInterrupt:  # as the command line says it (the service may go on)
        sys.stderr.write("memdir: interrupted\n")
        return 130
    if status != 200 or not body.startswith(ACK) or body.startswith(ACK + DECLINED):
        return None  # declined (another environment or version, busy): run it here
    answer = decode_answer(body[len(ACK) :])
    if answer is None:
        return None
    code, out, err = answer
    _write(sys.stdout, out)
    _write(sys.stderr, err)
    return code


def plan_request(argv: list[str]) -> bytes | None:
    """The request body for ``argv``, or None when the command is not one the service runs."""
    args = absolute_workspaces(argv)
    if args is None:
        return None
    stdin = b""
    if command_of(args) == "hook":
        try:
            stdin = sys.stdin.buffer.read(MAX_STDIN_BYTES) if sys.stdin is not None else b""
        except (OSError, ValueError):
            stdin = b""
        # Read once: if the service cannot answer, the command runs here on the same bytes.
        sys.stdin = _Replay(stdin)
    io = ":".join(
        f"{getattr(s, 'encoding', None) or 'utf-8'}:{getattr(s, 'errors', None) or 'strict'}"
        for s in (sys.stdout, sys.stderr)
    )
    env = dict(os.environ)
    return encode_request(args, os.getcwd(), env, _terminal(), stdin, io=io, build=build_id())


def absolute_workspaces(argv: list[str]) -> list[str] | None:
    """``argv`` for the service: every ``-w/--workspace`` made absolute (the service has its
    own working directory), and the default workspace named when none is given (the service
    has its own environment); None for a command the service does not run."""
    command = command_of(argv)
    if command not in SERVED:
        return None
    out: list[str] = []
    named = False
    take = False
    for arg in argv:
        if take:
            out.append(_absolute(arg))
            take, named = False, True
        elif arg == "--":
            out.extend(argv[len(out) :])
            break
        elif arg in ("-w", "--workspace"):
            out.append(arg)
            take = True
        elif arg.startswith("--workspace="):
            out.append("--workspace=" + _absolute(arg.split("=", 1)[1]))
            named = True
        elif arg.startswith("-w") and len(arg) > 2 and not arg.startswith("--"):
            out.append("-w" + _absolute(arg[2:]))
            named = True
        else:
            out.append(arg)
    if take:
        return None  # `-w` with nothing after it: let the command line say so
    if not named:
        env = os.environ.get("MEMDIR_WORKSPACE")
        default = env or os.path.join(memdir_home(), "workspace")
        out = ["-w", _absolute(default), *out]
    return out


def _absolute(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))


def _terminal() -> str:
    """``<stdout is a tty><stderr is a tty>:<columns>:<lines>`` (``10:120:40``): what the
    output's colours and width depend on (the size as rich finds it: the first of stdin,
    stdout and stderr that is a terminal; 0 for none)."""
    flags = "".join("1" if _isatty(s) else "0" for s in (sys.stdout, sys.stderr))
    for fd in (0, 1, 2):
        try:
            size = os.get_terminal_size(fd)
        except (OSError, ValueError):
            continue
        return f"{flags}:{size.columns}:{size.lines}"
    return f"{flags}:0:0"


def _isatty(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError, OSError):
        return False


def _write(stream: object, data: bytes) -> None:
    if not data:
        return
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        stream.flush()  # type: ignore[attr-defined]
        buffer.write(data)
        buffer.flush()
    else:
        stream.write(data.decode("utf-8", "replace"))  # type: ignore[attr-defined]


class _Replay:
    """stdin once read for the service, readable again by the command run here."""

    def __init__(self, data: bytes) -> None:
        import io

        self.buffer = io.BytesIO(data)

    def read(self, size: int = -1) -> str:
        return self.buffer.read(size).decode("utf-8", "replace")

    def isatty(self) -> bool:
        return False
