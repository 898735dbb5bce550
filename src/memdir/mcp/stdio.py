"""The stdio transport of ``memdir serve``: one JSON-RPC message a line on stdin and stdout, and
an answer to every request line, even one that cannot be read (issue 27).

The MCP SDK's transport (``mcp.server.stdio``) decodes stdin with ``errors="replace"``, so bytes
that are not UTF-8 silently became U+FFFD (in a fact ``memory_write`` then stored), and drops a
line its parser refuses with a debug log: a request holding a lone UTF-16 surrogate
(``"\\ud800"``, which Python's ``json`` reads and pydantic's parser does not) got no answer, and
the client waited for its own time-out. Here each line is read as strict UTF-8 and parsed by
the SDK's message model; a line that fails is answered with a JSON-RPC error, with the
request's id when it can be read (``null`` otherwise), and the server reads on:

- ``-32700`` (parse error): not UTF-8, or not JSON;
- ``-32602`` (invalid params): a lone surrogate in the params (JSON, but not Unicode text);
- ``-32600`` (invalid request): JSON, but not a JSON-RPC message.

JSON-RPC answers no notification (a method, no id) and no response (a result or an error, no
method), so one of those that cannot be read is only logged; anything else is answered, a line
with an id and no method included. A reply that cannot be written as UTF-8 becomes an internal
error for its request rather than ending the connection.

While serving, the wire moves to private descriptors and fd 0 reads the null device, fd 1
writes to stderr (as the SDK does), so a child process or a stray ``print`` cannot read or
corrupt it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import sys
from collections.abc import AsyncIterator, Iterator
from typing import IO, Any

import anyio
import anyio.to_thread
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

log = logging.getLogger("memdir.mcp")

_SURROGATE_RE = re.compile("[\ud800-\udfff]")
#: What :func:`stdio_transport` yields: the server reads from the first, writes to the second.
Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


# -- reading one line ---------------------------------------------------------------------


def read_message(line: bytes) -> tuple[types.JSONRPCMessage | None, types.JSONRPCError | None]:
    """What one line of stdin holds: ``(message, None)`` for a message to serve,
    ``(None, error)`` with the error that answers a request that cannot be read, or
    ``(None, None)`` for a blank line and an unreadable notification or response (JSON-RPC
    answers neither)."""
    if not line.strip():
        return None, None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Read on with the bad bytes kept as surrogates: the id may still be there.
        raw = line.decode("utf-8", "surrogateescape")
        bad = line[exc.start]
        problem = f"the line is not UTF-8 (byte 0x{bad:02x} at offset {exc.start}); send UTF-8"
        return None, _refusal(raw, types.PARSE_ERROR, "Parse error", problem)
    try:
        return types.jsonrpc_message_adapter.validate_json(text, by_name=False), None
    except ValidationError as exc:
        return None, _explain(text, exc)


def _explain(text: str, exc: ValidationError) -> types.JSONRPCError | None:
    """The error answering ``text``, which the SDK's model refused with ``exc``."""
    try:
        data = json.loads(text)  # lenient: lone surrogates and \ud800 escapes are read
    except ValueError as bad_json:
        problem = f"the line is not JSON ({bad_json})"
        return _error(None, types.PARSE_ERROR, f"Parse error: {problem}", text)
    where = _surrogate_at(data)
    if where is not None:
        code, kind = (
            (types.INVALID_PARAMS, "Invalid params")
            if where.startswith("params")
            else (types.INVALID_REQUEST, "Invalid request")
        )
        problem = (
            f"{where} holds a lone UTF-16 surrogate, which is not Unicode text; send UTF-8 "
            "(a surrogate pair such as \\ud83d\\ude00 is fine)"
        )
        return _refusal(text, code, kind, problem, data)
    first = exc.errors()[0]
    problem = f"not a JSON-RPC 2.0 message ({first['msg']} at {_dotted(first['loc'])})"
    return _refusal(text, types.INVALID_REQUEST, "Invalid request", problem, data)


def _refusal(
    text: str, code: int, kind: str, problem: str, data: Any = None
) -> types.JSONRPCError | None:
    """The error for a request, or None (logged) for a notification or a response."""
    if data is None:
        with contextlib.suppress(ValueError):
            data = json.loads(text)
    if _needs_no_answer(data):
        log.warning("memdir: an unreadable message that needs no answer was dropped: %s", problem)
        return None
    request_id = data.get("id") if isinstance(data, dict) else None
    return _error(request_id, code, f"{kind}: {problem}", text)


def _needs_no_answer(data: Any) -> bool:
    """Whether ``data`` is a notification (a method, no id) or a response (a result or an
    error, no method): JSON-RPC answers neither. Anything else that cannot be read is a request
    gone wrong, answered Invalid Request: ``{"jsonrpc": "2.0", "id": 7}`` (no method) waited
    forever for its answer (issue 35)."""
    if not isinstance(data, dict):
        return False
    if "method" in data:
        return "id" not in data
    return "result" in data or "error" in data


def _error(request_id: Any, code: int, message: str, text: str) -> types.JSONRPCError:
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        request_id = None
    elif isinstance(request_id, str) and _SURROGATE_RE.search(request_id):
        request_id = None  # it could not be written back
    log.warning("memdir: request %r refused: %s (%d characters)", request_id, message, len(text))
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
    )


def _surrogate_at(value: Any, where: str = "") -> str | None:
    """The dotted place of the first string (or key) holding a lone surrogate, else None."""
    if isinstance(value, str):
        return (where or "the message") if _SURROGATE_RE.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            place = f"{where}.{key}" if where else str(key)
            if _SURROGATE_RE.search(str(key)):
                return f"a key of {where or 'the message'}"
            found = _surrogate_at(item, place)
            if found is not None:
                return found
    if isinstance(value, list):
        for n, item in enumerate(value):
            found = _surrogate_at(item, f"{where}[{n}]")
            if found is not None:
                return found
    return None


def _dotted(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "the top"


# -- writing one message ------------------------------------------------------------------


def encode_message(message: types.JSONRPCMessage) -> bytes:
    """One line of stdout for ``message``; a reply that cannot be written as UTF-8 (a lone
    surrogate in it) becomes an internal error for its request."""
    try:
        text = message.model_dump_json(by_alias=True, exclude_unset=True)
    except ValueError as exc:  # pydantic's serialisation error is a ValueError
        request_id = getattr(message, "id", None)
        log.warning("memdir: reply to %r cannot be sent as UTF-8: %s", request_id, exc)
        error = types.ErrorData(
            code=types.INTERNAL_ERROR,
            message="Internal error: the reply held text that is not Unicode",
        )
        text = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error).model_dump_json(
            by_alias=True, exclude_unset=True
        )
    return text.encode("utf-8") + b"\n"


# -- the transport ------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def stdio_transport(
    stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None
) -> AsyncIterator[Streams]:
    """The read and write streams of an MCP server over stdio (``server.run(read, write, …)``).

    Args:
        stdin: where requests come from; default: the process's stdin, claimed.
        stdout: where replies go; default: the process's stdout, claimed.
    """
    with _claimed_stdio(stdin, stdout) as (wire_in, wire_out):
        incoming_send, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        outgoing, outgoing_receive = anyio.create_memory_object_stream[SessionMessage](0)
        replies = outgoing.clone()

        async def read_lines() -> None:
            async with incoming_send, replies:
                while line := await anyio.to_thread.run_sync(
                    wire_in.readline, abandon_on_cancel=True
                ):
                    message, refusal = read_message(line)
                    if refusal is not None:
                        await replies.send(SessionMessage(refusal))
                    elif message is not None:
                        await incoming_send.send(SessionMessage(message))

        async def write_lines() -> None:
            async with outgoing_receive:
                async for item in outgoing_receive:
                    data = encode_message(item.message)
                    await anyio.to_thread.run_sync(_write_line, wire_out, data)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read_lines)
            tasks.start_soon(write_lines)
            try:
                yield incoming, outgoing
            finally:
                outgoing.close()  # the writer ends once the reader's clone is closed too


def _write_line(wire: IO[bytes], data: bytes) -> None:
    wire.write(data)
    wire.flush()


@contextlib.contextmanager
def _claimed_stdio(
    stdin: IO[bytes] | None, stdout: IO[bytes] | None
) -> Iterator[tuple[IO[bytes], IO[bytes]]]:
    """The wire's two ends; the process's own when not given, moved to private descriptors
    while fd 0 reads the null device and fd 1 writes to stderr, and put back at the end."""
    if stdin is not None and stdout is not None:
        yield stdin, stdout
        return
    sys.stdout.flush()
    moved: list[tuple[int, int]] = []
    try:
        wire_in = _move_aside(0, os.open(os.devnull, os.O_RDONLY), moved)
        wire_out = _move_aside(1, os.dup(2), moved)
    except OSError:  # no descriptors to move (an embedding host): use the streams as they are
        _put_back(moved)
        yield stdin or sys.stdin.buffer, stdout or sys.stdout.buffer
        return
    try:
        with (
            os.fdopen(wire_in, "rb", closefd=False) as reader,
            os.fdopen(wire_out, "wb", closefd=False) as writer,
        ):
            yield stdin or reader, stdout or writer
    finally:
        _put_back(moved)


def _put_back(moved: list[tuple[int, int]]) -> None:
    for fd, private in reversed(moved):
        with contextlib.suppress(OSError):
            os.dup2(private, fd)
        # The private descriptor stays open: a reader thread abandoned at exit may still
        # block on it, and a closed number could be reused under it.


def _move_aside(fd: int, replacement: int, moved: list[tuple[int, int]]) -> int:
    """Point ``fd`` at ``replacement`` and return a private descriptor on what it was."""
    try:
        private = os.dup(fd)  # not inheritable, and above 2 (0–2 are open)
        os.dup2(replacement, fd)
    finally:
        os.close(replacement)
    moved.append((fd, private))
    return private
