"""The index in one SQLite file per workspace (the default engine).

- :mod:`.schema` — the numbered, append-only migrations and the tables.
- :mod:`.store` — :class:`SqliteStore`, the :class:`~memdir.index.base.IndexBackend`; its parts:
  :mod:`.meta` (transactions, meta, counters), :mod:`.fts` (keyword candidates),
  :mod:`.embeddings` (vectors stored once: the embedding cache) and :mod:`.codec`
  (the compact vector format).
- :mod:`.vectors` — vector search: exact, over a matrix decoded once per index generation.
- :mod:`.lifecycle` — :class:`SqliteLifecycle`: the file's location, writer lock, rebuild by
  swap, corrupt-file recovery; :mod:`.salvage` moves the embedding cache between files.
"""

from memdir.index.sqlite.lifecycle import INDEX_NAME, SqliteLifecycle
from memdir.index.sqlite.schema import SCHEMA_VERSION
from memdir.index.sqlite.store import SqliteStore, connect
from memdir.index.sqlite.vectors import (
    VECTOR_BACKENDS,
    NumpyVectorSearch,
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
    "SqliteVectorSearch",
    "connect",
    "create_vector_search",
]
