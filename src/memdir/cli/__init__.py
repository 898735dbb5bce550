"""The ``memdir`` command line: thin click commands over :class:`memdir.Memory`.

One module per command group; importing this package registers them all on :data:`cli`.
"""

from memdir.cli import index_cmds, search_cmds
from memdir.cli.main import cli, main

__all__ = ["cli", "index_cmds", "main", "search_cmds"]
