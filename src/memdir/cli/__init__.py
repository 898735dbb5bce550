"""The ``memdir`` command line: thin click commands over :class:`memdir.Memory`.

One module per command group; importing this package registers them all on :data:`cli`.
"""

from memdir.cli import chat_cmds, dream_cmds, index_cmds, search_cmds, serve_cmds, ui_cmds
from memdir.cli.main import cli, main

__all__ = [
    "chat_cmds",
    "cli",
    "dream_cmds",
    "index_cmds",
    "main",
    "search_cmds",
    "serve_cmds",
    "ui_cmds",
]
