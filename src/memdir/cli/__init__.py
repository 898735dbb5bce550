"""The ``memdir`` command line: thin click commands over :class:`memdir.Memory`.

One module per command group; :data:`memdir.cli.main.COMMAND_MODULES` says which, and a
command's module is imported only when the command runs (a search starts faster).
"""

from memdir.cli.main import cli, main

__all__ = ["cli", "main"]
