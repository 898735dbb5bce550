"""The input side of an interactive ``memdir chat``: prompt_toolkit's line editor.

- Line editing (Emacs keys by default), history kept in ``$MEMDIR_HOME/chat_history`` (mode
  0600: what you type may be private), suggestions from that history (→ takes one).
- Enter sends. A new line inside a message: Esc then Enter (Alt-Enter in most terminals), or end
  the line with a backslash and press Enter. Pasted text keeps its new lines.
- Typing ``/`` offers the slash commands, each with what it does; Tab or the arrows choose one,
  Enter takes the chosen (or only) one, Enter again sends it.
- The bottom toolbar: the model, how tools are called, the context's fill against its
  compaction budget, and the last turn's token use (``~`` marks memdir's own count where the
  provider reported none).

:func:`toolbar_text` and :func:`command_completions` are plain functions, so they are tested
without a terminal.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.output import Output

from memdir.agent.loop import ChatAgent
from memdir.config.settings import memdir_home

HISTORY_FILE = "chat_history"

#: The slash commands offered for completion, with what each does.
COMMANDS = {
    "/new": "archive this session, save what matters, start a new one",
    "/compact": "summarise the older turns now",
    "/remember": "save TEXT to long-term memory",
    "/search": "search memory yourself",
    "/status": "tokens, compactions, memory index, tool calling",
    "/help": "the commands",
    "/quit": "save what matters and leave",
}


def history_path() -> Path:
    """Where typed lines are kept between sessions: ``$MEMDIR_HOME/chat_history``."""
    return memdir_home() / HISTORY_FILE


def toolbar_text(agent: ChatAgent) -> str:
    """The status line under the prompt (see the module docstring)."""
    tokens = agent.context_tokens()
    fill = tokens / agent.budget if agent.budget else 0.0
    parts = [
        f"{agent.llm.name}/{agent.llm.model}",
        "native tools" if agent.native_tools else "text-protocol tools",
        f"context {tokens:,}/{agent.budget:,} ({fill:.0%})",
    ]
    last = agent.last_output
    if last is not None and last.requests:
        approx = "" if last.usage_reported else "~"
        parts.append(
            f"last turn {last.requests} req, {approx}{last.tokens_in:,} in, "
            f"{approx}{last.tokens_out:,} out"
        )
    return " · ".join(parts)


def command_completions(text: str) -> list[tuple[str, str]]:
    """``(command, help)`` for the slash commands that complete ``text``; none once the line
    has more than a command word."""
    if not text.startswith("/") or any(c.isspace() for c in text):
        return []
    return [(name, meta) for name, meta in COMMANDS.items() if name.startswith(text.lower())]


class LinePrompt:
    """Reads one message at a time with prompt_toolkit (see the module docstring).

    Args:
        agent: the chat agent (the toolbar reads its state).
        input: prompt_toolkit's input; None means the terminal (tests pass a pipe).
        output: prompt_toolkit's output; None means the terminal.
    """

    def __init__(
        self, agent: ChatAgent, *, input: Input | None = None, output: Output | None = None
    ) -> None:
        self.agent = agent
        self._toolbar = ""
        path = history_path()
        history: History
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists():
                path.touch(mode=0o600)
            history = FileHistory(os.fspath(path))
        except OSError:
            history = InMemoryHistory()  # an unwritable home: no history, still a prompt
        self.session: PromptSession[str] = PromptSession(
            history=history,
            completer=SlashCompleter(),
            complete_while_typing=True,
            auto_suggest=AutoSuggestFromHistory(),
            key_bindings=_key_bindings(),
            multiline=True,
            prompt_continuation="...  ",
            bottom_toolbar=lambda: self._toolbar,
            input=input,
            output=output,
        )

    def read(self) -> str:
        """The next message; the toolbar is computed once per prompt (it counts tokens).

        Raises:
            EOFError: Ctrl-D.
            KeyboardInterrupt: Ctrl-C.
        """
        self._toolbar = " " + toolbar_text(self.agent)
        return self.session.prompt("you> ")


class SlashCompleter(Completer):
    """Completes the slash commands at the start of a message."""

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterator[Completion]:
        text = document.text_before_cursor
        for name, meta in command_completions(text):
            yield Completion(name, start_position=-len(text), display_meta=meta)


def _key_bindings() -> KeyBindings:
    bindings = KeyBindings()

    @bindings.add("enter")
    def _send(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        # Enter on "/sta" takes the command it completes to (the one chosen in the menu, or
        # the only one); Enter on a whole command sends it.
        state = buffer.complete_state
        chosen = state.current_completion.text if state and state.current_completion else None
        if chosen is None:
            matches = command_completions(buffer.text)
            chosen = matches[0][0] if len(matches) == 1 else None
        if chosen is not None and chosen != buffer.text:
            buffer.text = chosen
            buffer.cursor_position = len(chosen)
            return
        if buffer.document.text_before_cursor.endswith("\\"):
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")
            return
        buffer.validate_and_handle()

    @bindings.add("escape", "enter")
    def _new_line(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    return bindings
