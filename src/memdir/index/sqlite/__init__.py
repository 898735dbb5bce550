"""The index in one SQLite file per workspace (the default engine).

- :mod:`.schema` — the numbered, append-only migrations and the tables.
- :mod:`.store` — :class:`SqliteStore`, the :class:`~memdir.index.base.IndexBackend`; its FTS5
  keyword candidates live in :mod:`.fts`.
- :mod:`.vectors` — vector search over the stored blobs: numpy (default) or sqlite-vec.
- :mod:`.lifecycle` — :class:`SqliteLifecycle`: the file's location, writer lock, rebuild by
  swap, corrupt-file recovery.
"""

from memdir.index.sqlite.lifecycle import INDEX_NAME, SqliteLifecycle
from memdir.index.sqlite.schema import SCHEMA_VERSION
from memdir.index.sqlite.store import SqliteStore, connect
from memdir.index.sqlite.vectors import (
    VECTOR_BACKENDS,
    NumpyVectorSearch,
    SqliteVecSearch,
    SqliteVectorSearch,
    create_vector_search,
)

__all__ = [
    "INDEX_NAME",
    "SCHEMA_VERSION",
    "VECTOR_BACKENDS",
    "NumpyVectorSearch",
    "SqliteLifecycle",
    "SqliteStore",
    "SqliteVecSearch",
    "SqliteVectorSearch",
    "connect",
    "create_vector_search",
]
