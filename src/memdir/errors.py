"""Every error memdir raises on purpose.

The tree::

    MemdirError                     base: catch this to handle anything memdir says
    ├── ConfigError                 a config file or value is wrong
    ├── WorkspaceError              the workspace is missing, unreadable or not writable
    │   ├── PathNotAllowed          a path escapes the workspace or is not a memory file
    │   └── ReadOnly                the workspace, a folder or a file in it cannot be written
    ├── IndexStoreError             the index cannot be opened or rebuilt
    │   └── DiskFull                the disk under the index is full (the index is kept)
    ├── ProviderError               an embedding/LLM provider failed
    │   ├── ProviderUnavailable     the provider cannot be used here (missing package, no key)
    │   └── ProviderResponseError   the provider answered wrongly (HTTP error, wrong dimension)
    │       └── ToolsUnsupported    the chat server refused native tool definitions
    └── QueryError                  the search query cannot be used

Each message says what went wrong and what to do next; the CLI prints it as one line.
"""

from __future__ import annotations


class MemdirError(Exception):
    """Base class of every error memdir raises on purpose."""


class ConfigError(MemdirError):
    """A configuration file or value is invalid."""


class WorkspaceError(MemdirError):
    """The workspace does not exist, cannot be read, or cannot be written."""


class PathNotAllowed(WorkspaceError):
    """A path is outside the workspace, goes through a symlink, or is not a memory file."""


class ReadOnly(WorkspaceError):
    """The workspace (a read-only mount or folder) or a file in it (made read-only by a
    person) cannot be written; memdir wrote nothing."""


class IndexStoreError(MemdirError):
    """The index cannot be opened, migrated or rebuilt."""


class DiskFull(IndexStoreError):
    """The disk (or quota) under the index is full: nothing was written, and the index is kept
    as it was (a full disk is not damage)."""


class ProviderError(MemdirError):
    """An embedding or LLM provider failed."""


class ProviderUnavailable(ProviderError):
    """The provider cannot be used on this machine (missing package, missing key, …)."""


class ProviderResponseError(ProviderError):
    """The provider answered, but wrongly (HTTP error, malformed body, wrong dimension).

    Attributes:
        status: the HTTP status of the answer, when there was one.
        detail: the server's own words about the error (secrets removed), when there were any.
    """

    def __init__(self, message: str, *, status: int | None = None, detail: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail


class ToolsUnsupported(ProviderResponseError):
    """The chat server refused a request because of its tool definitions (the model or the
    server has no native tool calling); the chat agent falls back to its text protocol."""


class QueryError(MemdirError):
    """The query cannot be searched."""


__all__ = [
    "ConfigError",
    "IndexStoreError",
    "MemdirError",
    "PathNotAllowed",
    "ProviderError",
    "ProviderResponseError",
    "ProviderUnavailable",
    "QueryError",
    "ReadOnly",
    "ToolsUnsupported",
    "WorkspaceError",
]
