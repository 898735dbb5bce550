"""The chat agent behind ``memdir chat``: context assembly, the session transcript, tools and the
loop that runs the memory lifecycle (docs/design.md#working-memory, #lifecycle)."""

from memdir.agent.loop import ChatAgent, Output
from memdir.agent.session import Session

__all__ = ["ChatAgent", "Output", "Session"]
