"""The index: the storage interfaces (:mod:`.base`), the generic manager (:mod:`.manager`), sync
and BM25, and one package per storage engine (:mod:`.sqlite`, the default; :mod:`.postgres`)."""

from memdir.index.base import ChunkRow, IndexBackend, IndexLifecycle
from memdir.index.manager import INDEX_ENGINES, IndexManager, index_identity
from memdir.index.sync import SyncReport

__all__ = [
    "INDEX_ENGINES",
    "ChunkRow",
    "IndexBackend",
    "IndexLifecycle",
    "IndexManager",
    "SyncReport",
    "index_identity",
]
