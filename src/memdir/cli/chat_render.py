"""How ``memdir chat`` draws a turn in a terminal: replies as Markdown while they stream.

:class:`TerminalView` is the :class:`~memdir.agent.turn.TurnListener` of an interactive chat.
The reply is rendered as Markdown *progressively*, a block at a time: the text up to the last
blank line outside a code fence is made of finished blocks (paragraphs, lists, tables, fenced
code), which are rendered with rich and printed for good; the block still being written is
rendered again each time text arrives (at most every :data:`REFRESH_SECONDS`) in a live region
below them. So headings, lists, tables and code look right while they arrive, nothing is
printed twice, and the screen scrolls normally. Rendering blocks apart gives the same lines as
rendering the whole reply (rich puts one blank line between blocks), which is what lets the
finished ones be printed once. A block taller than the screen (a long code block) has its top
lines printed as they scroll out, since a live region taller than the screen cannot be redrawn.

This was chosen over printing raw text and rendering it at the end (the raw text cannot be
taken back once it has scrolled off) and over re-rendering the whole reply live (it flickers,
and breaks as soon as the reply is taller than the screen).

While the model thinks or a tool runs, the live region shows a spinner. Tool lines and notes
are printed above it as they happen. :class:`PlainView` is for an output that is not a
terminal: text goes out as it comes, without Markdown rendering or spinners.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from typing import Literal

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markdown import Markdown
from rich.spinner import Spinner
from rich.text import Text

#: Lines a block under way may always keep live (a taller screen allows more).
LIVE_LINES = 6
#: Least time between two renderings of a streaming reply, in seconds.
REFRESH_SECONDS = 0.08

ColorSystem = Literal["standard", "256", "truecolor", "windows"]
_COLOR_SYSTEMS: dict[str, ColorSystem] = {
    "standard": "standard",
    "256": "256",
    "truecolor": "truecolor",
    "windows": "windows",
}


class MarkdownStream:
    """One reply segment rendered as Markdown while it streams (see the module docstring).

    Args:
        console: the terminal.
        live: the live region the block under way is drawn in.
        clock: the time source.
    """

    def __init__(
        self, console: Console, live: Live, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.console = console
        self.live = live
        self.clock = clock
        self.text = ""
        self._printed = 0  # lines printed for good
        self._last = float("-inf")  # the first piece is drawn at once
        self._done: tuple[int, list[str]] = (0, [])  # the finished blocks' text end and lines

    def add(self, delta: str) -> None:
        """Take the next piece of text; redraw when enough time has passed."""
        self.text += delta
        if self.clock() - self._last >= REFRESH_SECONDS:
            self._draw(final=False)

    def finish(self) -> None:
        """Print whatever is not printed yet; the segment is over."""
        if self.text.strip():
            self._draw(final=True)
        self.live.update(Text(""))

    def _draw(self, *, final: bool) -> None:
        self._last = self.clock()
        cut = len(self.text) if final else finished_blocks_end(self.text)
        if cut != self._done[0]:
            head = self.text[:cut]
            self._done = (cut, render_markdown(head, self.console) if head.strip() else [])
        done = self._done[1]
        tail = self.text[cut:]
        under_way = render_markdown(tail, self.console) if tail.strip() else []
        lines = done + ([""] if done and under_way else []) + under_way
        room = max(LIVE_LINES, self.console.height - 4)
        stable = max(self._printed, len(done), len(lines) - room)
        if stable > self._printed:
            self.console.print(Text.from_ansi("\n".join(lines[self._printed : stable])))
            self._printed = stable
        self.live.update(Text.from_ansi("\n".join(lines[self._printed :])), refresh=True)


def finished_blocks_end(text: str) -> int:
    """Where the finished Markdown blocks of ``text`` end: just after its last blank line that
    is not inside a fenced code block (0 if there is none)."""
    end = 0
    fence = ""
    position = 0
    for line in text.splitlines(keepends=True):
        position += len(line)
        if not line.endswith("\n"):
            break  # a line still being written
        stripped = line.strip()
        marker = stripped[:3]
        if marker in ("```", "~~~") and (not fence or marker == fence):
            fence = "" if fence else marker
        elif not stripped and not fence:
            end = position
    return end


def render_markdown(text: str, console: Console) -> list[str]:
    """``text`` rendered as Markdown for ``console``: one string (ANSI codes included) a line."""
    buffer = io.StringIO()
    canvas = Console(
        file=buffer,
        width=console.width,
        color_system=_COLOR_SYSTEMS.get(console.color_system or ""),
        force_terminal=console.is_terminal,
        no_color=console.no_color,
        highlight=False,
    )
    canvas.print(Markdown(text))
    return buffer.getvalue().rstrip("\n").split("\n")


class TerminalView:
    """The live view of one turn in a terminal (a :class:`~memdir.agent.turn.TurnListener`).

    Use it as a context manager around :meth:`~memdir.agent.loop.ChatAgent.handle`: the live
    region is removed on the way out, whatever happened.
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live = Live(
            _spinner("thinking…"),
            console=console,
            transient=True,
            refresh_per_second=12,
            vertical_overflow="visible",
        )
        self.segment: MarkdownStream | None = None
        #: Some reply text was shown.
        self.showed_text = False

    def __enter__(self) -> TerminalView:
        self.live.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._end_segment()
        self.live.stop()

    def text(self, delta: str) -> None:
        if self.segment is None:
            self.segment = MarkdownStream(self.console, self.live)
        self.segment.add(delta)
        self.showed_text = True

    def tool_call(self, name: str) -> None:
        self._end_segment()
        self.live.update(_spinner(f"{name}…"))

    def tool_result(self, line: str) -> None:
        self._end_segment()
        self.console.print(Text(f"  · {line}", style="cyan"))
        self.live.update(_spinner("thinking…"))

    def note(self, line: str) -> None:
        self._end_segment()
        self.console.print(Text(f"  · {line}", style="dim"))

    def _end_segment(self) -> None:
        if self.segment is not None:
            self.segment.finish()
            self.segment = None
            self.live.update(_spinner("thinking…"))


class PlainView:
    """A turn on an output that is not a terminal: text as it comes, notes on their own lines."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.showed_text = False
        self._open_line = False

    def __enter__(self) -> PlainView:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._close_line()

    def text(self, delta: str) -> None:
        self.console.print(delta, end="", markup=False, highlight=False)
        self.showed_text = True
        self._open_line = not delta.endswith("\n")

    def tool_call(self, name: str) -> None:
        self._close_line()

    def tool_result(self, line: str) -> None:
        self._close_line()
        self.console.print(f"  · {line}", markup=False, highlight=False)

    def note(self, line: str) -> None:
        self._close_line()
        self.console.print(f"  · {line}", markup=False, highlight=False)

    def _close_line(self) -> None:
        if self._open_line:
            self.console.print()
            self._open_line = False


def _spinner(label: str) -> RenderableType:
    return Group(Spinner("dots", Text(f" {label}", style="dim")))
