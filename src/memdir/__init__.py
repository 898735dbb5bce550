"""memdir: long-term memory for AI agents as plain Markdown files with a local SQLite index."""

from memdir.config import Config, load_config
from memdir.embeddings.base import Embedder
from memdir.embeddings.fake import FakeEmbedder
from memdir.errors import (
    ConfigError,
    IndexStoreError,
    MemdirError,
    PathNotAllowed,
    ProviderError,
    ProviderResponseError,
    ProviderUnavailable,
    QueryError,
    WorkspaceError,
)
from memdir.llm.base import LLM
from memdir.llm.fake import ScriptedLLM
from memdir.memory import GetResult, Memory
from memdir.search import SearchResponse, SearchResult
from memdir.workspace import init_workspace

__version__ = "0.1.0"

__all__ = [
    "LLM",
    "Config",
    "ConfigError",
    "Embedder",
    "FakeEmbedder",
    "GetResult",
    "IndexStoreError",
    "MemdirError",
    "Memory",
    "PathNotAllowed",
    "ProviderError",
    "ProviderResponseError",
    "ProviderUnavailable",
    "QueryError",
    "ScriptedLLM",
    "SearchResponse",
    "SearchResult",
    "WorkspaceError",
    "init_workspace",
    "load_config",
]
