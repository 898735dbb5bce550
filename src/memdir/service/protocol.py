"""The per-user service's names and wire format, shared by the service and the thin client
(:mod:`memdir.client`), which imports this at every start of the ``memdir`` executable: nothing
here imports more than ``os`` (and ``_socket`` when a request is sent).

- the files under ``$MEMDIR_HOME/service/`` (:func:`read_endpoint`);
- ``POST /v1/cli``'s body, framed without JSON (:func:`encode_request`; the service reads it
  with :func:`memdir.service.commands.decode_request`) and its answer (:func:`encode_answer`);
- an HTTP/1.1 request over the service's Unix socket (:func:`post`), without ``http.client``:
  only its user can connect to it, so the client never hands the token, its environment or a
  prompt to a process that took the TCP port first.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import _socket

#: The commands the service runs for a client (their output does not depend on this process).
SERVED = frozenset({"search", "get", "remember", "status", "hook"})
#: ``MEMDIR_SERVICE`` values that keep every command in this process.
OFF_VALUES = frozenset({"off", "0", "no", "false"})
#: The service's files, under ``$MEMDIR_HOME``.
SERVICE_DIR = "service"
STATE_FILE = "service.json"
TOKEN_FILE = "token"
SOCKET_FILE = "service.sock"
#: The request body's first line (the framing's version).
PROTOCOL = b"memdir-cli/2"
#: Seconds to wait for the connection (a local socket: it is there at once or not at all) …
CONNECT_TIMEOUT_S = 0.5
#: … and for the first bytes of the answer (a stopped or stuck service sends none).
FIRST_BYTE_S = 3.0
#: What the body of ``POST /v1/cli`` starts with at once, before the command runs.
ACK = b"\n"
#: What follows the acknowledgement when the service does not run the command.
DECLINED = b"declined "
#: Seconds to wait for the answer (a search after a big edit may sync first) …
ANSWER_TIMEOUT_S = 300.0
#: … except for the hooks Claude Code waits for before the session goes on: a service that does
#: not answer in time is passed by and the hook runs in the client, within the entry's timeout
#: (``[hooks] recall_timeout`` 10 s + 15 s).
HOOK_ANSWER_TIMEOUT_S = {"session-start": 8.0, "user-prompt-submit": 12.0}
#: Hook input beyond this many bytes is not read (as :data:`memdir.hooks.events.MAX_INPUT_BYTES`).
MAX_STDIN_BYTES = 16 * 1024 * 1024


def memdir_home() -> str:
    """``$MEMDIR_HOME`` or ``~/.memdir`` (as :func:`memdir.config.settings.memdir_home`)."""
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


def socket_path(home: str | None = None) -> str:
    """Where the service's Unix socket is when ``service.json`` does not say:
    ``$MEMDIR_HOME/service/service.sock`` (:mod:`memdir.service.unix_socket` chooses another
    private folder when that path is too long or cannot be used, and writes it there)."""
    return os.path.join(service_dir(home), SOCKET_FILE)


def read_endpoint(home: str | None = None) -> tuple[str, str] | None:
    """The running service's socket and token; None when there is none: no state file, its
    process gone, a token that is not a private regular file of ours, or a socket that is not
    ours (another user cannot stand in for the service: see docs/design.md)."""
    folder = service_dir(home)
    state = _read_private(os.path.join(folder, STATE_FILE), 4096)
    token = _read_private(os.path.join(folder, TOKEN_FILE), 256)
    if state is None or token is None or not _alive(_number_in(state, b'"pid":')):
        return None
    sock = _string_in(state, b'"socket":') or socket_path(home)
    try:
        info = os.lstat(sock)
        where = os.lstat(os.path.dirname(sock))
    except OSError:
        return None
    if info.st_uid != os.getuid() or (info.st_mode & 0o170000) != 0o140000:
        return None
    if where.st_uid != os.getuid() or (where.st_mode & 0o170077) != 0o040000:
        return None  # not a private folder of ours (0700, not a link): it could be swapped
    value = token.decode("ascii", "replace").strip()
    return (sock, value) if value else None


def _read_private(path: str, limit: int) -> bytes | None:
    """A regular file of ours (not a link, a FIFO or a device: none can block or mislead)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if (info.st_mode & 0o170000) != 0o100000 or info.st_uid != os.getuid():
            return None
        return os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # another user's process: not our service
    return True


def _string_in(state: bytes, key: bytes) -> str | None:
    """The ``"key": "…"`` of the state file, written by ``json.dumps`` (ASCII, with JSON's
    escapes), read without json (see the module's docstring)."""
    at = state.find(key)
    if at < 0:
        return None
    rest = state[at + len(key) :].lstrip()
    if not rest.startswith(b'"'):
        return None
    end = 1
    while end < len(rest) and rest[end] != 0x22:  # the closing quote, not an escaped one
        end += 2 if rest[end] == 0x5C else 1
    if end >= len(rest):
        return None
    try:
        text = rest[1:end].decode("ascii").encode("ascii").decode("unicode_escape")
        # \ud83d\ude00 pairs joined; a lone surrogate kept (a name that is not UTF-8).
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    except UnicodeError:
        return None


def _number_in(state: bytes, key: bytes) -> int | None:
    """The ``"key": N`` of the state file (read without json: see the module's docstring)."""
    at = state.find(key)
    if at < 0:
        return None
    digits = state[at + len(key) :].lstrip()[:10]
    end = 0
    while end < len(digits) and 48 <= digits[end] <= 57:
        end += 1
    return int(digits[:end]) if end else None


# -- the framing ------------------------------------------------------------------------------


def encode_request(
    argv: list[str],
    cwd: str,
    env: dict[str, str],
    terminal: str,
    stdin: bytes,
    *,
    io: str = "utf-8:strict:utf-8:backslashreplace",
    build: str = "",
) -> bytes:
    """``PROTOCOL``, then NUL-separated fields: cwd, terminal (``<stdout tty><stderr
    tty>:<columns>:<lines>``), io (stdout's and stderr's encoding and errors,
    ``enc:errors:enc:errors``), build (:func:`build_id`), the argument count, the arguments,
    the variable count, ``NAME=value`` variables; then stdin, to the end (arguments and
    variables cannot hold NUL; stdin may)."""
    fields = [cwd, terminal, io, build, str(len(argv)), *argv, str(len(env))]
    fields += [f"{k}={v}" for k, v in env.items()]
    head = "\0".join(fields).encode("utf-8", "surrogateescape")
    return PROTOCOL + b"\n" + head + b"\0" + stdin


def build_id() -> str:
    """Which memdir this is: its version and when its package was installed (the mtime of its
    ``__init__.py``): a service that runs other code than the client declines."""
    import memdir

    try:
        stamp = os.stat(memdir.__file__ or "").st_mtime_ns
    except OSError:
        stamp = 0
    return f"{memdir.__version__}@{stamp}"


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


# -- HTTP over the service's Unix socket --------------------------------------------------


def post(
    sock_path: str,
    token: str,
    path: str,
    body: bytes,
    *,
    timeout: float = ANSWER_TIMEOUT_S,
    method: str = "POST",
) -> tuple[int, bytes]:
    """``POST`` (or ``method``) ``body`` to ``path`` over the Unix socket at ``sock_path``; the
    status and the response body. The first bytes must come within :data:`FIRST_BYTE_S` (the
    service answers a command with an acknowledgement at once): a service that is stopped or
    stuck is passed by in seconds, whatever ``timeout`` allows for the whole answer.

    Raises:
        OSError: no connection, a timeout, or an answer that is not HTTP.
    """
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT_S)
        sock.connect(sock_path)
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: memdir\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/octet-stream\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        sock.sendall(head.encode("ascii") + body)
        sock.settimeout(min(FIRST_BYTE_S, timeout))
        chunks = [sock.recv(65536)]
        sock.settimeout(timeout)
        while chunks[-1]:
            chunks.append(sock.recv(65536))
    finally:
        sock.close()
    return parse_response(b"".join(chunks))


def post_and_hold(
    sock_path: str, token: str, path: str, *, timeout: float = 60.0
) -> tuple[int, bytes, _socket.socket | None]:
    """``POST`` to ``path`` over the Unix socket and read the answer's first line, leaving the
    connection open (``/v1/ui``: the service keeps the inspector while it is): the status, the
    first line of the body (a refusal's whole body), and the open connection (None after a
    refusal); the caller waits on it (``recv`` returns ``b""`` once the service lets go) and
    closes it.

    Raises:
        OSError: no connection, a timeout, or an answer that is not HTTP.
    """
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT_S)
        sock.connect(sock_path)
        head = (
            f"POST {path} HTTP/1.1\r\nHost: memdir\r\nAuthorization: Bearer {token}\r\n"
            "Content-Length: 0\r\n\r\n"
        )
        sock.sendall(head.encode("ascii"))
        sock.settimeout(timeout)
        data = b""
        while b"\r\n\r\n" not in data:
            data += _received(sock)
        status, _ = parse_response(data.split(b"\r\n\r\n", 1)[0] + b"\r\n\r\n")
        if status != 200:
            while chunk := sock.recv(65536):
                data += chunk
            sock.close()
            return status, parse_response(data)[1], None
        body = data.split(b"\r\n\r\n", 1)[1]
        while b"\n" not in _unchunk_open(body):
            body += _received(sock)
        return status, _unchunk_open(body).split(b"\n", 1)[0], sock
    except ValueError as exc:  # a chunk size that is not hex
        sock.close()
        raise OSError("the service's answer is not HTTP") from exc
    except BaseException:
        sock.close()
        raise


def _received(sock: _socket.socket) -> bytes:
    chunk = sock.recv(65536)
    if not chunk:
        raise OSError("the service closed the connection")
    return chunk


def _unchunk_open(data: bytes) -> bytes:
    """The data of the complete chunks at the start of a chunked body still being sent."""
    out = []
    while True:
        size_line, sep, rest = data.partition(b"\r\n")
        if not sep:
            break
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0 or len(rest) < size:
            break
        out.append(rest[:size])
        data = rest[size + 2 :]
    return b"".join(out)


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
