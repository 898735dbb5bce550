"""Calls with a time limit: the work runs on a daemon thread that is waited for at most so long.

Used where a caller must answer in time whatever a provider or a file does: an MCP tool call,
the slug of a session archive, an LLM call inside a Claude Code hook. Work past its limit goes
on in the background (a thread cannot be stopped) and its result is dropped.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, TypeVar

from memdir.errors import MemdirError

T = TypeVar("T")


class CallTimedOut(MemdirError):
    """The work took longer than its limit; it goes on in the background."""


#: The threads left running by calls past their limit, for :func:`abandoned_calls`.
_ABANDONED: ContextVar[list[threading.Thread] | None] = ContextVar("memdir_abandoned", default=None)


@contextlib.contextmanager
def abandoned_calls() -> Iterator[list[threading.Thread]]:
    """Collect the threads of the calls that pass their limit inside the ``with`` (on this
    thread): a server lending one Memory to a call knows whether work on it goes on after the
    call returned (the service then gives the next call a fresh one)."""
    threads: list[threading.Thread] = []
    token = _ABANDONED.set(threads)
    try:
        yield threads
    finally:
        _ABANDONED.reset(token)


def run_with_timeout(fn: Callable[[], T], seconds: float, name: str, *, hint: str = "") -> T:
    """``fn()`` on its own thread, waited for at most ``seconds``.

    Args:
        fn: the work; what it raises is raised here.
        seconds: the limit.
        name: what the work is, for the error message.
        hint: added to the message when the limit passes (what to do next).

    Raises:
        CallTimedOut: it took longer (``"<name> took longer than N s<hint>"``).
    """
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=work, name=f"memdir {name}", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        abandoned = _ABANDONED.get()
        if abandoned is not None:
            abandoned.append(worker)
        raise CallTimedOut(f"{name} took longer than {seconds:g} s{hint}")
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value
