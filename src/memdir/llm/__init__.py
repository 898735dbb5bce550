"""LLM providers: the LLM protocol (and the chat protocol with native tools and streaming), a
registry, OpenAI-compatible / Anthropic / scripted fake, token counting, and prompt loading."""

from memdir.llm.base import LLM, Message, ToolCall, count_message_tokens, count_tokens
from memdir.llm.chat import (
    ChatEvent,
    ChatLLM,
    ChatReply,
    ReplyDone,
    TextDelta,
    ToolCallStart,
    ToolDefinition,
    Usage,
)
from memdir.llm.fake import LLMCall, ScriptedLLM
from memdir.llm.prompts import load_prompt
from memdir.llm.registry import create_llm, llm_names, register_llm

__all__ = [
    "LLM",
    "ChatEvent",
    "ChatLLM",
    "ChatReply",
    "LLMCall",
    "Message",
    "ReplyDone",
    "ScriptedLLM",
    "TextDelta",
    "ToolCall",
    "ToolCallStart",
    "ToolDefinition",
    "Usage",
    "count_message_tokens",
    "count_tokens",
    "create_llm",
    "llm_names",
    "load_prompt",
    "register_llm",
]
