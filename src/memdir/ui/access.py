"""Who may use the inspector, and which writes a person confirmed (issue 35: a second Unix user
read every note through an inspector on 127.0.0.1, and with ``--writable`` changed MEMORY.md).

- :class:`Access`: one-time sign-in codes and the sessions they become. ``memdir ui`` prints a
  URL holding a code (``?token=…``); the first request that brings it gets a session of its own
  as a cookie (HttpOnly, SameSite=Strict: :mod:`memdir.ui.security` sets it and redirects to the
  same URL without the code), and the code is spent. Every other request needs a session (or
  the fixed token of ``MEMDIR_UI_TOKEN``). Sessions and codes live in this process only: an
  inspector that stops takes them with it.
- :class:`Confirmations`: a write the person previewed (a dream run) is applied only with the
  code issued for that preview, once, within :data:`CONFIRM_TTL_S`.

Codes and sessions are 192-bit random values, compared in constant time.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

#: Seconds a confirmation code stays valid after its preview.
CONFIRM_TTL_S = 600.0
#: Confirmation codes kept at once (the oldest go first): a page reloaded many times.
MAX_CONFIRMATIONS = 64


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


class Access:
    """The inspector's sign-in codes and sessions (see the module's docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._codes: list[str] = []
        self._sessions: list[str] = []

    def issue(self) -> str:
        """A new one-time sign-in code, for the URL ``memdir ui`` prints."""
        code = secrets.token_urlsafe(24)
        with self._lock:
            self._codes.append(code)
        return code

    def sign_in(self, code: str) -> str | None:
        """The new session that ``code`` opens, spending it; None for a code that is not one
        of this inspector's or was spent already."""
        with self._lock:
            found = next((c for c in self._codes if _same(code, c)), None)
            if found is None:
                return None
            self._codes.remove(found)
            session = secrets.token_urlsafe(24)
            self._sessions.append(session)
            return session

    def allows(self, session: str) -> bool:
        """Whether ``session`` (a cookie's value) is one this inspector opened."""
        if not session:
            return False
        with self._lock:
            return any(_same(session, s) for s in self._sessions)


class Confirmations:
    """One-time codes that confirm a previewed write (a dream run): each names what its preview
    would write (a digest), is taken once, and only within ``ttl_s`` seconds.

    Args:
        ttl_s: seconds a code stays valid.
        clock: monotonic seconds (for tests).
    """

    def __init__(
        self, ttl_s: float = CONFIRM_TTL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl_s = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._issued: OrderedDict[str, tuple[str, float]] = OrderedDict()

    def issue(self, digest: str) -> str:
        """A new code for a preview whose content is ``digest``."""
        code = secrets.token_hex(8)
        with self._lock:
            self._issued[code] = (digest, self._clock())
            while len(self._issued) > MAX_CONFIRMATIONS:
                self._issued.popitem(last=False)
        return code

    def take(self, code: str) -> str | None:
        """The digest ``code`` was issued for, spending the code; None when it is unknown,
        spent or older than ``ttl_s``."""
        with self._lock:
            found = next((c for c in self._issued if _same(code, c)), None)
            if found is None:
                return None
            digest, issued = self._issued.pop(found)
        return digest if self._clock() - issued <= self.ttl_s else None


__all__ = ["CONFIRM_TTL_S", "Access", "Confirmations"]
