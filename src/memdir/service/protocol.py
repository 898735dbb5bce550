"""The per-user service's names and wire format, shared by the service and the thin client
(:mod:`memdir.client`), which imports this at every start of the ``memdir`` executable: nothing
here imports more than ``os`` (and ``_socket`` when a request is sent).

- the files under ``$MEMDIR_HOME/service/`` (:func:`read_endpoint`);
- ``POST /v1/cli``'s body, framed without JSON (:func:`encode_request`; the service reads it
  with :func:`memdir.service.commands.decode_request`) and its answer (:func:`encode_answer`);
- an HTTP/1.1 request over loopback (:func:`post`), without ``http.client``.
"""

from __future__ import annotations

import os

#: The commands the service runs for a client (their output does not depend on this process).
SERVED = frozenset({"search", "get", "remember", "status", "hook"})
#: ``MEMDIR_SERVICE`` values that keep every command in this process.
OFF_VALUES = frozenset({"off", "0", "no", "false"})
#: The service's files, under ``$MEMDIR_HOME``.
SERVICE_DIR = "service"
STATE_FILE = "service.json"
TOKEN_FILE = "token"
#: The request body's first line (the framing's version).
PROTOCOL = b"memdir-cli/1"
#: Seconds to wait for the connection (loopback: it is there at once or not at all).
CONNECT_TIMEOUT_S = 0.5
#: Seconds to wait for the answer (a search after a big edit may sync first) …
ANSWER_TIMEOUT_S = 300.0
#: … except for the hooks Claude Code waits for before the session goes on: a service that does
#: not answer in time is passed by and the hook runs in the client, within the entry's timeout
#: (``[hooks] recall_timeout`` 10 s + 15 s).
HOOK_ANSWER_TIMEOUT_S = {"session-start": 8.0, "user-prompt-submit": 12.0}
#: Hook input beyond this many bytes is not read (as :data:`memdir.hooks.events.MAX_INPUT_BYTES`).
MAX_STDIN_BYTES = 16 * 1024 * 1024


def memdir_home() -> str:
    """``$MEMDIR_HOME`` or ``~/.memdir`` (as :func:`memdir.config.memdir_home`)."""
    home = os.environ.get("MEMDIR_HOME")
    return os.path.expanduser(home) if home else os.path.join(os.path.expanduser("~"), ".memdir")


def service_dir(home: str | None = None) -> str:
    return os.path.join(home or memdir_home(), SERVICE_DIR)


def command_of(argv: list[str]) -> str | None:
    """The command of ``argv`` (the first word that is not a global option), or None."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in ("-w", "--workspace"):
            skip = True
        elif arg.startswith("--workspace=") or (arg.startswith("-w") and len(arg) > 2):
            continue
        elif arg.startswith("-"):
            return None  # --version, --help, an unknown option: the command line says
        else:
            return arg
    return None


def read_endpoint(home: str | None = None) -> tuple[int, str] | None:
    """The running service's port and token, from its state files; None when there is none."""
    folder = service_dir(home)
    try:
        with open(os.path.join(folder, STATE_FILE), "rb") as f:
            state = f.read(4096)
        with open(os.path.join(folder, TOKEN_FILE), "rb") as f:
            token = f.read(256).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    port = _port_in(state)
    if port is None or not token:
        return None
    return port, token


def _port_in(state: bytes) -> int | None:
    """The ``"port": N`` of the state file (read without json: see the module's docstring)."""
    at = state.find(b'"port":')
    if at < 0:
        return None
    digits = state[at + 7 :].lstrip()[:6]
    end = 0
    while end < len(digits) and 48 <= digits[end] <= 57:
        end += 1
    port = int(digits[:end]) if end else 0
    return port if 0 < port < 65536 else None


# -- the framing ------------------------------------------------------------------------------


def encode_request(
    argv: list[str], cwd: str, env: dict[str, str], terminal: str, stdin: bytes
) -> bytes:
    """``PROTOCOL``, then NUL-separated fields: cwd, terminal, the argument count, the
    arguments, the variable count, ``NAME=value`` variables; then stdin, to the end (arguments
    and variables cannot hold NUL; stdin may)."""
    fields = [cwd, terminal, str(len(argv)), *argv, str(len(env))]
    fields += [f"{k}={v}" for k, v in env.items()]
    head = "\0".join(fields).encode("utf-8", "surrogateescape")
    return PROTOCOL + b"\n" + head + b"\0" + stdin


def decode_answer(body: bytes) -> tuple[int, bytes, bytes] | None:
    """``<code> <stdout length>\\n<stdout><stderr>`` → (code, stdout, stderr)."""
    line, sep, rest = body.partition(b"\n")
    parts = line.split(b" ")
    if not sep or len(parts) != 2 or not all(p.lstrip(b"-").isdigit() for p in parts):
        return None
    code, size = int(parts[0]), int(parts[1])
    if not 0 <= size <= len(rest):
        return None
    return code, rest[:size], rest[size:]


def encode_answer(code: int, out: bytes, err: bytes) -> bytes:
    return f"{code} {len(out)}\n".encode("ascii") + out + err


# -- HTTP over loopback -----------------------------------------------------------------------


def post(
    port: int,
    token: str,
    path: str,
    body: bytes,
    *,
    timeout: float = ANSWER_TIMEOUT_S,
    method: str = "POST",
) -> tuple[int, bytes]:
    """``POST`` (or ``method``) ``body`` to ``127.0.0.1:port`` ``path``; the status and the
    response body.

    Raises:
        OSError: no connection, a timeout, or an answer that is not HTTP.
    """
    import _socket

    sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT_S)
        sock.connect(("127.0.0.1", port))
        sock.settimeout(timeout)
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/octet-stream\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        sock.sendall(head.encode("ascii") + body)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        sock.close()
    return parse_response(b"".join(chunks))


def parse_response(raw: bytes) -> tuple[int, bytes]:
    """An HTTP/1.1 response (``Connection: close``) → (status, body).

    Raises:
        OSError: it is not one.
    """
    head, sep, body = raw.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].split(b" ")
    if not sep or len(status_line) < 2 or not status_line[1].isdigit():
        raise OSError("the service's answer is not HTTP")
    headers = head.lower()
    if b"\r\ntransfer-encoding: chunked" in headers:
        body = _unchunk(body)
    return int(status_line[1]), body


def _unchunk(data: bytes) -> bytes:
    out = []
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out.append(data[:size])
        data = data[size + 2 :]
    return b"".join(out)
