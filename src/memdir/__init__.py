"""memdir: long-term memory for AI agents as plain Markdown files with a local SQLite index.

The names below are imported on first use (a command that does not need the LLM clients or the
index never loads them); ``from memdir import Memory`` works as usual.
"""

from memdir._lazy import lazy_exports

#: ``typing.TYPE_CHECKING`` without importing typing (every start of the executable imports
#: this package; see memdir.client): type checkers treat the name as true.
TYPE_CHECKING = False

__version__ = "0.1.0"

_EXPORTS = {
    "LLM": "memdir.llm.base",
    "Config": "memdir.config.settings",
    "ConfigError": "memdir.errors",
    "Embedder": "memdir.embeddings.base",
    "FakeEmbedder": "memdir.embeddings.fake",
    "GetResult": "memdir.memory.browse",
    "IndexStoreError": "memdir.errors",
    "MemdirError": "memdir.errors",
    "Memory": "memdir.memory.facade",
    "PathNotAllowed": "memdir.errors",
    "ProviderError": "memdir.errors",
    "ProviderResponseError": "memdir.errors",
    "ProviderUnavailable": "memdir.errors",
    "QueryError": "memdir.errors",
    "ScriptedLLM": "memdir.llm.fake",
    "SearchResponse": "memdir.search.types",
    "SearchResult": "memdir.search.types",
    "WorkspaceError": "memdir.errors",
    "init_workspace": "memdir.workspace.templates",
    "load_config": "memdir.config.settings",
}
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

if TYPE_CHECKING:
    from memdir.config.settings import Config, load_config
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
    from memdir.memory.browse import GetResult
    from memdir.memory.facade import Memory
    from memdir.search.types import SearchResponse, SearchResult
    from memdir.workspace.templates import init_workspace

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
