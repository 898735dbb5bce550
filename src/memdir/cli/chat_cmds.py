"""``memdir chat`` (a terminal agent with memory) and ``memdir compact``."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import click
from rich.console import Console

from memdir.agent.loop import ChatAgent, ToolMode
from memdir.agent.session import Session
from memdir.cli.chat_render import PlainView, TerminalView
from memdir.cli.common import stdout, styled
from memdir.cli.main import cli
from memdir.config.settings import Config, memdir_home
from memdir.errors import ConfigError, MemdirError
from memdir.llm.base import API_KEY_ENV, BASE_URL_ENV, LLM, MODEL_ENV
from memdir.llm.registry import chat_llm_choice, create_llm
from memdir.memory.facade import Memory

if TYPE_CHECKING:
    from memdir.cli.chat_tui import LinePrompt


def chat_llm(config: Config) -> LLM:
    """The chat model of :func:`memdir.llm.registry.chat_llm_choice`.

    Raises:
        ConfigError: no model is configured (the message says exactly what to set).
        ProviderUnavailable: the configured provider cannot run here.
    """
    llm = create_llm(chat_llm_choice(config).settings)
    if llm is None:
        raise ConfigError(
            "no LLM configured: set provider under [llm] in "
            f'{memdir_home() / "config.toml"} (e.g. provider = "openai", model = "…", '
            f'api_key = "env:YOUR_KEY_VAR"), or set {BASE_URL_ENV}, {MODEL_ENV} and '
            f"{API_KEY_ENV} for an OpenAI-compatible server"
        )
    return llm


def _say_where_the_llm_comes_from(config: Config) -> None:
    """One line on stderr when the environment, not the config, chose the provider."""
    choice = chat_llm_choice(config)
    if choice.source.startswith("environment"):
        click.echo(f"memdir: llm {choice.settings.provider}: {choice.source}", err=True)


@contextlib.contextmanager
def _chat_llm(config: Config) -> Iterator[LLM]:
    llm = chat_llm(config)
    try:
        yield llm
    finally:
        close: Any = getattr(llm, "close", None)
        if callable(close):
            close()


def _open(ctx: click.Context, shared: bool, resume: str | None) -> tuple[Memory, Session | None]:
    workspace: Path = ctx.obj
    memory = Memory(workspace, scope="shared" if shared else "private")
    if resume is None:
        return memory, None
    try:
        session = Session.load(memory.workspace.state_dir, resume)
    except MemdirError:
        memory.close()
        raise
    if session.scope != memory.scope:
        memory.close()
        raise MemdirError(
            f"session {session.id} is a {session.scope} session: "
            + ("add --shared" if session.scope == "shared" else "leave out --shared")
        )
    return memory, session


@cli.command("chat")
@click.option(
    "--shared",
    is_flag=True,
    help="A shared (group) session: MEMORY.md and USER.md stay hidden; writes go to the log.",
)
@click.option("--resume", metavar="ID", help="Continue a saved session ('last': the latest).")
@click.option("--no-recall", is_flag=True, help="Do not add <relevant-memories> to messages.")
@click.option("--no-capture", is_flag=True, help="Do not auto-capture 'remember …' messages.")
@click.option(
    "--tools",
    type=click.Choice(["auto", "native", "text"]),
    default="auto",
    show_default=True,
    help="How the model calls memory tools: native tool calls unless the server refused them "
    "before (auto), always native (native: also forgets a remembered refusal once they work), "
    "or the JSON-line text protocol (text).",
)
@click.pass_context
def chat_command(
    ctx: click.Context,
    shared: bool,
    resume: str | None,
    no_recall: bool,
    no_capture: bool,
    tools: ToolMode,
) -> None:
    """Chat with an agent that searches, reads and writes your memory.

    In a terminal: replies stream in as Markdown, Ctrl-C stops a reply (what was shown is
    kept), Esc-Enter or a trailing backslash starts a new line, Tab completes the commands
    /new, /compact, /remember TEXT, /search QUERY, /status, /help, /quit. When stdin is not a
    terminal, each line is one message or command and replies are printed plainly.
    """
    memory, session = _open(ctx, shared, resume)
    with memory, _chat_llm(memory.config) as llm:
        _say_where_the_llm_comes_from(memory.config)
        interactive = sys.stdin.isatty()
        agent = ChatAgent(
            memory,
            llm,
            session=session,
            recall=not no_recall,
            capture=not no_capture,
            stream=interactive,
            tools=tools,
        )
        if interactive:
            _interactive(agent)
        elif not _scripted(agent, sys.stdin):
            ctx.exit(1)


@cli.command("compact")
@click.option(
    "--session",
    "session_id",
    default="last",
    show_default=True,
    metavar="ID",
    help="The chat session to compact.",
)
@click.option("--shared", is_flag=True, help="The session is a shared one.")
@click.pass_context
def compact_command(ctx: click.Context, session_id: str, shared: bool) -> None:
    """Compact a saved chat session now: memory flush, then summary of all but the last 3
    user turns. Continue it with `memdir chat --resume ID`."""
    memory, session = _open(ctx, shared, session_id)
    with memory, _chat_llm(memory.config) as llm:
        assert session is not None
        agent = ChatAgent(memory, llm, session=session, recall=False, capture=False)
        notes = agent.compact(manual=True)
        failed = agent.last_compaction is not None and not agent.last_compaction.ok
        out = stdout()
        for note in notes[:-1] if failed else notes:
            out.print(note)
        if failed:
            raise MemdirError(notes[-1])


def _scripted(agent: ChatAgent, stdin: TextIO) -> bool:
    """One message or command per line; replies on stdout, notes on stderr. Returns False when
    a line failed."""
    ok = True
    for raw in stdin:
        result = agent.handle(raw)
        for line in [*result.tools, *result.notes]:
            click.echo(f"memdir: {line}", err=True)
        if result.text:
            click.echo(result.text)
        if result.error:
            click.echo(f"memdir: error: {result.error}", err=True)
            ok = False
        if result.quit:
            return ok
    for note in agent.end():
        click.echo(f"memdir: {note}", err=True)
    return ok


def _interactive(agent: ChatAgent) -> None:
    """The terminal chat: prompt_toolkit's editor when stdin and stdout are terminals (else
    ``input()``), each turn drawn live by a view (see :mod:`memdir.cli.chat_render`)."""
    out = stdout()
    reader = _line_reader(agent, out)
    out.print(
        styled(
            ("memdir chat", "bold"),
            f" · session {agent.session.id} ({agent.session.scope}) · "
            f"{agent.llm.name}/{agent.llm.model} · /help for commands, Ctrl-D to quit",
        )
    )
    if reader is not None:
        out.print("Esc-Enter or a trailing \\ for a new line · Ctrl-C stops a reply", style="dim")
    elif not agent.native_tools:
        out.print(f"tools: {agent.tool_calling.describe()}", style="dim")
    while True:
        try:
            line = reader.read() if reader is not None else input(f"[{meter(agent)}] you> ")
        except KeyboardInterrupt:
            if reader is None:
                out.print()
                _show_notes(out, agent.end())
                return
            out.print("  (Ctrl-D or /quit to leave)", style="dim")
            continue
        except EOFError:
            out.print()
            _show_notes(out, agent.end())
            return
        view: TerminalView | PlainView = TerminalView(out) if out.is_terminal else PlainView(out)
        try:
            with view:
                result = agent.handle(line, view)
        except KeyboardInterrupt:
            out.print("  · interrupted; your message is kept in the history", style="dim")
            continue
        if result.text and not view.showed_text:
            out.print(result.text, highlight=False)
        if result.interrupted:
            out.print("  · interrupted: what was shown is kept", style="dim")
        if result.error:
            out.print(f"error: {result.error}", style="red")
        if result.quit:
            return


def _line_reader(agent: ChatAgent, out: Console) -> LinePrompt | None:
    """prompt_toolkit's editor, or None for ``input()`` (not a terminal, or no
    prompt_toolkit: then a hint)."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return None
    try:
        from memdir.cli.chat_tui import LinePrompt
    except ImportError:
        out.print(
            "line editing and history need prompt_toolkit: pip install prompt_toolkit", style="dim"
        )
        return None
    return LinePrompt(agent)


def meter(agent: ChatAgent) -> str:
    """``1,234/6,400 tok``: the context now against the compaction budget."""
    return f"{agent.context_tokens():,}/{agent.budget:,} tok"


def _show_notes(out: Console, notes: list[str]) -> None:
    for note in notes:
        out.print(f"  · {note}", style="dim")
