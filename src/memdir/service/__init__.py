"""The per-user service (``memdir daemon``): one long-running process that keeps each workspace's
:class:`~memdir.memory.facade.Memory` warm (model, jieba, vector matrix, watcher, background
embedding) and answers Claude Code's HTTP hooks, MCP over streamable HTTP and the thin-client CLI
(:mod:`memdir.client`) on 127.0.0.1 with a per-user token. docs/design.md#the-per-user-service.

- :mod:`~memdir.service.state`: its files under ``$MEMDIR_HOME/service/`` (port, pid, token).
- :mod:`~memdir.service.unix_socket`: its Unix socket, in a folder only its user can create.
- :mod:`~memdir.service.pool`: the warm workspaces, closed when idle.
- :mod:`~memdir.service.capture`: per-request stdin, stdout and stderr for commands.
- :mod:`~memdir.service.commands`: a client's ``memdir search|get|remember|status|hook``.
- :mod:`~memdir.service.inspectors`: the inspectors ``memdir ui`` holds open.
- :mod:`~memdir.service.app`: the routes, behind the Host and token checks.
- :mod:`~memdir.service.daemon`: run, start in the background, stop, status.
"""
