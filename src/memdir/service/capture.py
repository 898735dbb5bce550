"""Per-request standard streams: the service runs many clients' commands on its threads, each
with its own stdin, stdout and stderr.

:func:`install` replaces ``sys.stdin``, ``sys.stdout`` and ``sys.stderr`` once with switches
that send each call to the streams of the request running on the calling thread's context
(:func:`captured`), and to the process's own streams otherwise (the service's log). click and
rich look the streams up at every write, so a command's output lands in its own buffers.
"""

from __future__ import annotations

import contextlib
import io
import sys
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TextIO


class Stream(io.TextIOWrapper):
    """A UTF-8 text stream over a byte buffer that says it is (or is not) a terminal."""

    def __init__(
        self,
        data: bytes = b"",
        *,
        tty: bool = False,
        encoding: str = "utf-8",
        errors: str = "replace",
    ) -> None:
        super().__init__(io.BytesIO(data), encoding=encoding, errors=errors, write_through=True)
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty

    def fileno(self) -> int:  # no descriptor: rich and click fall back to the environment
        raise io.UnsupportedOperation("a captured stream has no file descriptor")

    def value(self) -> bytes:
        self.flush()
        raw = self.buffer
        assert isinstance(raw, io.BytesIO)
        return raw.getvalue()


@dataclass
class Streams:
    """One request's streams."""

    stdin: Stream
    stdout: Stream
    stderr: Stream
    output: dict[str, bytes] = field(default_factory=dict)


_CURRENT: ContextVar[Streams | None] = ContextVar("memdir_streams", default=None)
_INSTALLED = threading.Lock()


class _Switch:
    """Stands in for one of ``sys``'s streams: the request's, else the process's."""

    def __init__(self, name: str, process: TextIO) -> None:
        self._name = name
        self._process = process

    def _target(self) -> Any:
        streams = _CURRENT.get()
        return getattr(streams, self._name) if streams is not None else self._process

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._target(), attr)

    def write(self, text: str) -> int:
        written: int = self._target().write(text)
        return written

    def flush(self) -> None:
        self._target().flush()

    def isatty(self) -> bool:
        return bool(self._target().isatty())

    def fileno(self) -> int:
        return int(self._target().fileno())

    def __iter__(self) -> Iterator[str]:
        return iter(self._target())


def install() -> None:
    """Put the switches in place (once per process)."""
    with _INSTALLED:
        if not isinstance(sys.stdout, _Switch):
            sys.stdin = _Switch("stdin", sys.stdin)
            sys.stdout = _Switch("stdout", sys.stdout)
            sys.stderr = _Switch("stderr", sys.stderr)


@contextlib.contextmanager
def captured(
    stdin: bytes,
    *,
    stdout_tty: bool,
    stderr_tty: bool,
    io: tuple[str, str, str, str] = ("utf-8", "strict", "utf-8", "backslashreplace"),
) -> Iterator[Streams]:
    """This thread's standard streams, for the ``with``: ``stdin`` to read, and buffers for
    stdout and stderr with the client's encodings and error handlers (``io``: stdout's
    encoding and errors, stderr's), read from :attr:`Streams.output` after the ``with``."""
    install()
    streams = Streams(
        Stream(stdin),
        Stream(tty=stdout_tty, encoding=io[0], errors=io[1]),
        Stream(tty=stderr_tty, encoding=io[2], errors=io[3]),
    )
    token = _CURRENT.set(streams)
    try:
        yield streams
    finally:
        _CURRENT.reset(token)
        streams.output = {"stdout": streams.stdout.value(), "stderr": streams.stderr.value()}
