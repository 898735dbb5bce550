"""LLM providers: the LLM protocol, a registry, OpenAI-compatible / Anthropic / scripted fake,
token counting, and prompt loading."""

from memdir.llm.base import LLM, Message, count_message_tokens, count_tokens
from memdir.llm.fake import LLMCall, ScriptedLLM
from memdir.llm.prompts import load_prompt
from memdir.llm.registry import create_llm, llm_names, register_llm

__all__ = [
    "LLM",
    "LLMCall",
    "Message",
    "ScriptedLLM",
    "count_message_tokens",
    "count_tokens",
    "create_llm",
    "llm_names",
    "load_prompt",
    "register_llm",
]
