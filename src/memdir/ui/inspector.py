"""What the views of ``memdir ui`` share: the :class:`Inspector` (the Memory, one call at a
time, the options and the templates), how a view finds it, and the app's :class:`UIOptions`.

The views import this module and :mod:`memdir.ui.app` imports the views: nothing runs back up.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from memdir import __version__
from memdir.memory.facade import Memory
from memdir.ui import present
from memdir.ui.access import Access, Confirmations
from memdir.ui.security import LOOPBACK_NAMES

T = TypeVar("T")


@dataclass(frozen=True)
class UIOptions:
    """How the inspector runs.

    Attributes:
        writable: allow the actions that write memory (applying a dream run); each still needs
            an explicit confirmation. Off: the inspector only reads.
        token: a fixed token that lets a request in besides a session (``MEMDIR_UI_TOKEN``).
        allowed_hosts: Host header names accepted; empty accepts any (with a token).
        csrf: the per-process token a write must carry.
        access: the one-time sign-in codes and the sessions they open (every request needs
            a session or the fixed token).
    """

    writable: bool = False
    token: str | None = None
    allowed_hosts: tuple[str, ...] = LOOPBACK_NAMES
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    access: Access = field(default_factory=Access)


NAV = (
    ("search", "/search", "Search"),
    ("files", "/files", "Files"),
    ("index", "/index", "Index"),
    ("dreaming", "/dreaming", "Dreaming"),
    ("history", "/history", "History"),
    ("review", "/review", "Review"),
)


class Inspector:
    """What the views share: the Memory (one call at a time), the options and the templates."""

    def __init__(
        self,
        memory: Memory,
        options: UIOptions,
        lender: Callable[[], AbstractContextManager[Memory]] | None = None,
    ) -> None:
        self.memory = memory
        self.options = options
        #: In the per-user service: lends the workspace's current warm Memory under the lock
        #: its other callers share (docs/design.md#the-per-user-service).
        self.lender = lender
        self.root = str(memory.workspace.root)
        self.lock = threading.Lock()
        #: The codes that confirm a previewed dream run (once each, for 10 minutes).
        self.confirmations = Confirmations()
        self.templates = Environment(
            loader=PackageLoader("memdir.ui", "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.templates.filters.update(present.FILTERS)
        self.templates.globals.update(
            nav=NAV, version=__version__, file_url=present.file_url, percent=present.percent
        )

    def call(self, fn: Callable[[Memory], T]) -> T:
        """Run ``fn`` on the Memory, one call at a time."""
        if self.lender is not None:
            with self.lender() as memory:
                return fn(memory)
        with self.lock:
            return fn(self.memory)

    def render(
        self, request: Request, template: str, context: Mapping[str, Any], status: int = 200
    ) -> HTMLResponse:
        """An HTML page (or fragment) from ``template``."""
        html = self.templates.get_template(template).render(
            request=request,
            csrf=self.options.csrf,
            writable=self.options.writable,
            workspace=self.root,
            **context,
        )
        return HTMLResponse(html, status_code=status)


def inspector(request: Request) -> Inspector:
    """The :class:`Inspector` of the app serving ``request``."""
    ui: Inspector = request.app.state.inspector
    return ui


__all__ = ["NAV", "Inspector", "UIOptions", "inspector"]
