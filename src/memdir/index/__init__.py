"""The index: the storage interface, SQLite (default) and PostgreSQL engines, sync, vector
search, lifecycle."""

from memdir.index.base import ChunkRow, IndexBackend, IndexLifecycle
from memdir.index.manager import INDEX_BACKENDS, IndexManager, index_identity
from memdir.index.store import IndexStore
from memdir.index.sync import SyncReport

__all__ = [
    "INDEX_BACKENDS",
    "ChunkRow",
    "IndexBackend",
    "IndexLifecycle",
    "IndexManager",
    "IndexStore",
    "SyncReport",
    "index_identity",
]
