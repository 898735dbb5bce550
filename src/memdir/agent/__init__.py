"""The chat agent behind ``memdir chat``: context assembly, the session transcript, tools and the
loop that runs the memory lifecycle (docs/design.md#working-memory, #lifecycle).

The names below are imported on first use, so that a module that needs only the context
assembly (a Claude Code hook) does not load the chat loop.
"""

from typing import TYPE_CHECKING

from memdir._lazy import lazy_exports

_EXPORTS = {
    "ChatAgent": "memdir.agent.loop",
    "Output": "memdir.agent.loop",
    "Session": "memdir.agent.session",
}
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

if TYPE_CHECKING:
    from memdir.agent.loop import ChatAgent, Output
    from memdir.agent.session import Session

__all__ = ["ChatAgent", "Output", "Session"]
