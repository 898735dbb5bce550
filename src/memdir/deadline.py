"""Calls with a time limit: the work runs on a daemon thread that is waited for at most so long.

Used where a caller must answer in time whatever a provider or a file does: an MCP tool call,
the slug of a session archive, an LLM call inside a Claude Code hook. Work past its limit goes
on in the background (a thread cannot be stopped) and its result is dropped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from memdir.errors import MemdirError

T = TypeVar("T")


class CallTimedOut(MemdirError):
    """The work took longer than its limit; it goes on in the background."""


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
        raise CallTimedOut(f"{name} took longer than {seconds:g} s{hint}")
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value
