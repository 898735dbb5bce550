"""The index on PostgreSQL + pgvector: one database for many agents, hosts and teams (issue #7).

Selected by ``[index] url = "postgresql://…"`` or ``MEMDIR_INDEX_URL``; needs
the ``postgres`` extra (psycopg 3 + pgvector) and a server with the ``vector``
extension. The Markdown files stay the truth: every host indexes its own copy of the workspace
into the shared rows, and every search reads them.

- :mod:`.schema` — connecting, the numbered migrations, the per-dimension HNSW indexes.
- :mod:`.store` — :class:`PostgresStore`, the :class:`~memdir.index.base.IndexBackend`.
- :mod:`.lifecycle` — :class:`PostgresLifecycle`: advisory writer lock, one-transaction rebuild.

Tables (prefixed ``memdir_`` so they can share a database; every row carries the
``workspace_id``, so one database serves many workspaces that never see each other):

- ``memdir_workspaces``: per workspace, the write generation and the corpus statistics BM25
  needs (chunk count, token total), updated in the same transaction as the chunks.
- ``memdir_meta``: key/value per workspace (the index identity).
- ``memdir_files`` + ``memdir_file_seen``: the indexed files, and the (mtime, size) each host
  saw when it indexed or checked them — hosts with identical files do not re-hash each other's
  work, and a host never prunes a file it has not seen (another host added it).
- ``memdir_chunks``: the chunk text and memdir's own segmented ``tokens`` (the very text the
  SQLite FTS5 column stores), plus ``tsv = array_to_tsvector(tokens split on spaces)`` under a
  GIN index. The lexemes are exactly memdir's tokens; PostgreSQL's text-search parser never runs
  (``to_tsvector('simple', …)`` would re-split them by its own rules: it turns ``²x`` into
  ``x`` and drops words over 2 KB).
- ``memdir_terms``: each term's document frequency per workspace, so BM25's IDF costs one
  indexed lookup per query term.
- ``memdir_vectors``: one pgvector ``vector`` per chunk with its dimension; one HNSW index
  (cosine) per dimension, a partial expression index ``(embedding::vector(d)) WHERE dims = d``.
- ``memdir_embedding_cache``: (workspace, provider, model, provider key, text hash) → vector.

Keyword search: candidates are the rows whose ``tsv`` matches the quoted, OR-ed query terms,
pre-ranked in SQL by memdir's BM25 with every term frequency taken as 1 (IDF from the term
table, length normalisation from ``token_count``), then re-scored exactly by
:func:`memdir.index.bm25.bm25_search` — the code that scores SQLite's candidates. FTS5 pre-ranks
by its own ``bm25()`` instead; both hand over ``limit × PREFETCH`` rows.

Vector search: exact (``ORDER BY embedding <=> q``, no index) while a workspace holds at most
:data:`EXACT_SEARCH_MAX` vectors — the answers of SQLite's numpy search; above that the HNSW
index with an iterative scan (pgvector ≥ 0.8) so the workspace filter cannot starve the result.

Concurrency: every write transaction first takes ``pg_advisory_xact_lock`` on the workspace,
and the index manager holds the same lock (session level) around each write phase: one writer
per workspace at a time on any host, while readers never wait (MVCC). Reindexing a file is one
transaction; an identity change rebuilds the workspace's rows in one transaction, so readers see
the old index or the new one. Chunks are unique per (workspace, chunk id), so even writers that
bypass the lock cannot duplicate a chunk.

Connections run in autocommit mode with server-side prepared statements off
(``prepare_threshold=None``): a prepared plan keeps the ``hnsw.ef_search`` it was planned with.
The writer lock is a session-level advisory lock, so a transaction-mode pooler (PgBouncer in
transaction mode, some managed "pooler" endpoints) cannot sit in between: connect directly or
through a session-mode pooler.
"""

from memdir.index.postgres.lifecycle import PostgresLifecycle
from memdir.index.postgres.schema import (
    EXACT_SEARCH_MAX,
    HNSW_MAX_DIMS,
    SCHEMA_VERSION,
    connect,
    redact_url,
)
from memdir.index.postgres.store import PostgresStore

__all__ = [
    "EXACT_SEARCH_MAX",
    "HNSW_MAX_DIMS",
    "SCHEMA_VERSION",
    "PostgresLifecycle",
    "PostgresStore",
    "connect",
    "redact_url",
]
