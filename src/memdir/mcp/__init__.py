"""memdir as an MCP server (``memdir serve``; docs/design.md#interfaces): the server that serves
the tool contract of :mod:`memdir.tools` over one :class:`~memdir.Memory`
(:mod:`~memdir.mcp.server`), and its stdio transport, which answers every line it is sent
(:mod:`~memdir.mcp.stdio`). The official MCP SDK (``import mcp``) is imported only when a
server is built.
"""
