"""The memory tools (``memory_search``, ``memory_get``, ``memory_write``): one contract, shared
by the MCP server, the chat agent and its prompt (:mod:`.contract`), and one way to run a call
(:mod:`.calls`)."""

from memdir.config.settings import MAX_RESULTS
from memdir.tools.calls import call_tool, read_capped
from memdir.tools.contract import (
    FORGET_TOOL,
    MAX_GET_CHARS,
    MAX_GET_LINES,
    SCORE_MEANING,
    SERVER_INSTRUCTIONS,
    TOOL_NAMES,
    ToolSpec,
    memory_tools,
)

__all__ = [
    "FORGET_TOOL",
    "MAX_GET_CHARS",
    "MAX_GET_LINES",
    "MAX_RESULTS",
    "SCORE_MEANING",
    "SERVER_INSTRUCTIONS",
    "TOOL_NAMES",
    "ToolSpec",
    "call_tool",
    "memory_tools",
    "read_capped",
]
