"""The SQLite index: schema and migrations, storage, sync, vector search, lifecycle."""

from memdir.index.manager import IndexManager, index_identity
from memdir.index.store import ChunkRow, IndexStore
from memdir.index.sync import SyncReport

__all__ = ["ChunkRow", "IndexManager", "IndexStore", "SyncReport", "index_identity"]
