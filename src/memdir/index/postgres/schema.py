"""Connecting to PostgreSQL, the schema as numbered migrations, and the HNSW indexes.

Never edit a migration that has shipped: add the next one. The version lives in
``memdir_schema``; migrating runs under a database-wide advisory lock, so processes starting
together migrate once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from memdir.errors import IndexStoreError
from memdir.extras import install_hint

SCHEMA_VERSION = 5
#: The meaning of the stored rows, part of the index identity: bump it when a migration changes
#: what is stored (every workspace is then rebuilt), not when it only adds an index.
DATA_VERSION = 1
#: Exact vector search up to this many vectors in a workspace; the HNSW index above it.
EXACT_SEARCH_MAX = 20_000
#: pgvector's HNSW index takes ``vector`` columns of at most this many dimensions.
HNSW_MAX_DIMS = 2000
PIP_HINT = install_hint("postgres")


def advisory_key(name: str) -> int:
    """A signed 64-bit advisory-lock key for ``name``."""
    digest = hashlib.sha256(f"memdir:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


MIGRATE_LOCK = advisory_key("migrate")

MIGRATIONS: tuple[str, ...] = (
    # 1: the initial schema. Identifiers and terms compare bytewise (COLLATE "C"): faster
    # keys, and the same order on every server whatever its locale.
    """
    CREATE TABLE memdir_workspaces (
        workspace_id text COLLATE "C" PRIMARY KEY,
        generation   bigint NOT NULL DEFAULT 0,
        chunk_count  bigint NOT NULL DEFAULT 0,
        token_total  bigint NOT NULL DEFAULT 0
    );
    CREATE TABLE memdir_meta (
        workspace_id text COLLATE "C" NOT NULL,
        key          text COLLATE "C" NOT NULL,
        value        text NOT NULL,
        PRIMARY KEY (workspace_id, key)
    );
    CREATE TABLE memdir_files (
        workspace_id text COLLATE "C" NOT NULL,
        path         text COLLATE "C" NOT NULL,
        source       text COLLATE "C" NOT NULL,
        hash         text COLLATE "C" NOT NULL,
        mtime_ns     bigint NOT NULL,
        size         bigint NOT NULL,
        indexed_at   double precision NOT NULL,
        warning      text,
        PRIMARY KEY (workspace_id, path)
    );
    CREATE TABLE memdir_file_seen (
        workspace_id text COLLATE "C" NOT NULL,
        host         text COLLATE "C" NOT NULL,
        path         text COLLATE "C" NOT NULL,
        mtime_ns     bigint NOT NULL,
        size         bigint NOT NULL,
        PRIMARY KEY (workspace_id, host, path),
        FOREIGN KEY (workspace_id, path) REFERENCES memdir_files ON DELETE CASCADE
    );
    CREATE TABLE memdir_chunks (
        seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        workspace_id text COLLATE "C" NOT NULL,
        id           text COLLATE "C" NOT NULL,
        path         text COLLATE "C" NOT NULL,
        source       text COLLATE "C" NOT NULL,
        start_line   integer NOT NULL,
        end_line     integer NOT NULL,
        hash         text COLLATE "C" NOT NULL,
        model        text COLLATE "C" NOT NULL,
        text         text NOT NULL,
        tokens       text NOT NULL,
        embeddable   boolean NOT NULL,
        token_count  integer NOT NULL,
        updated_at   double precision NOT NULL,
        tsv tsvector GENERATED ALWAYS AS
            (array_to_tsvector(array_remove(string_to_array(tokens, ' '), ''))) STORED,
        UNIQUE (workspace_id, id)
    );
    ALTER TABLE memdir_chunks ALTER COLUMN tsv SET STORAGE MAIN;
    CREATE INDEX memdir_chunks_by_path ON memdir_chunks (workspace_id, path);
    CREATE INDEX memdir_chunks_tsv ON memdir_chunks USING gin (tsv);
    CREATE TABLE memdir_terms (
        workspace_id text COLLATE "C" NOT NULL,
        term         text COLLATE "C" NOT NULL,
        df           bigint NOT NULL,
        PRIMARY KEY (workspace_id, term)
    );
    CREATE TABLE memdir_vectors (
        seq          bigint PRIMARY KEY REFERENCES memdir_chunks ON DELETE CASCADE,
        workspace_id text COLLATE "C" NOT NULL,
        dims         integer NOT NULL,
        embedding    vector NOT NULL
    );
    CREATE INDEX memdir_vectors_by_workspace ON memdir_vectors (workspace_id, dims);
    CREATE TABLE memdir_embedding_cache (
        workspace_id text COLLATE "C" NOT NULL,
        provider     text COLLATE "C" NOT NULL,
        model        text COLLATE "C" NOT NULL,
        provider_key text COLLATE "C" NOT NULL,
        hash         text COLLATE "C" NOT NULL,
        dims         integer NOT NULL,
        embedding    vector NOT NULL,
        created_at   double precision NOT NULL,
        PRIMARY KEY (workspace_id, provider, model, provider_key, hash)
    )
    """,
    # 2: the shortest chunks first, for keyword candidates of common terms
    """
    CREATE INDEX memdir_chunks_by_length ON memdir_chunks (workspace_id, token_count, seq)
    """,
    # 3: the companion model's codes (issue 34), by text hash like the embedding cache
    """
    CREATE TABLE memdir_companion (
        workspace_id text COLLATE "C" NOT NULL,
        model        text COLLATE "C" NOT NULL,
        hash         text COLLATE "C" NOT NULL,
        code         bytea NOT NULL,
        PRIMARY KEY (workspace_id, model, hash)
    )
    """,
    # 4: every host's copy of a file keeps its own rows (issue 37): ``memdir_copies`` is what
    # each host indexed (it replaces ``memdir_file_seen``), ``memdir_holders`` which copies hold
    # each chunk (a chunk two copies share is stored once). The hosts of an older index held
    # its last writer's chunks; their copies are marked unseen (mtime -1), so each host reads
    # its files once more and keeps, re-chunks or releases them: nothing is embedded again.
    """
    CREATE TABLE memdir_copies (
        workspace_id text COLLATE "C" NOT NULL,
        host         text COLLATE "C" NOT NULL,
        path         text COLLATE "C" NOT NULL,
        hash         text COLLATE "C" NOT NULL,
        mtime_ns     bigint NOT NULL,
        size         bigint NOT NULL,
        indexed_at   double precision NOT NULL,
        PRIMARY KEY (workspace_id, host, path)
    );
    CREATE TABLE memdir_holders (
        workspace_id text COLLATE "C" NOT NULL,
        host         text COLLATE "C" NOT NULL,
        path         text COLLATE "C" NOT NULL,
        seq          bigint NOT NULL REFERENCES memdir_chunks ON DELETE CASCADE,
        PRIMARY KEY (workspace_id, host, path, seq)
    );
    CREATE INDEX memdir_holders_by_seq ON memdir_holders (seq);
    INSERT INTO memdir_copies
        SELECT s.workspace_id, s.host, s.path, f.hash, -1, s.size, f.indexed_at
        FROM memdir_file_seen s JOIN memdir_files f USING (workspace_id, path);
    INSERT INTO memdir_holders
        SELECT s.workspace_id, s.host, s.path, c.seq FROM memdir_file_seen s
        JOIN memdir_chunks c ON c.workspace_id = s.workspace_id AND c.path = s.path;
    DROP TABLE memdir_file_seen
    """,
    # 5: one HNSW index per large workspace instead of one per dimension shared by all
    # (issue 37: a shared index made a filtered search skip the other workspaces' rows, and
    # lose recall); each large workspace's writer builds its own (``ensure_workspace_index``).
    r"""
    DO $$
    DECLARE name text;
    BEGIN
        FOR name IN SELECT indexname FROM pg_indexes
            WHERE tablename = 'memdir_vectors' AND indexname LIKE 'memdir\_vectors\_hnsw\_%'
        LOOP
            EXECUTE format('DROP INDEX %I', name);
        END LOOP;
    END $$
    """,
)


def driver() -> tuple[Any, Callable[[Any], None]]:
    """``(psycopg, pgvector's register_vector)``, or a clear error naming the extra."""
    try:
        import psycopg
        from pgvector.psycopg import register_vector
    except ImportError as exc:
        raise IndexStoreError(
            f"the PostgreSQL index needs psycopg 3 and pgvector ({exc.name} is missing): {PIP_HINT}"
        ) from exc
    return psycopg, register_vector


def redact_url(url: str) -> str:
    """``url`` without its password (for status lines and error messages)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def first_line(exc: BaseException) -> str:
    """The first line of an error message (psycopg's carry a multi-line context)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def connect(url: str) -> Any:
    """Connect in autocommit mode, enable pgvector and migrate the schema.

    Raises:
        IndexStoreError: the server cannot be reached, pgvector is missing and this user may
            not create it, or the schema is newer than this memdir.
    """
    psycopg, register_vector = driver()
    try:
        conn = psycopg.connect(url, autocommit=True, prepare_threshold=None, connect_timeout=10)
    except psycopg.Error as exc:
        raise IndexStoreError(
            f"cannot connect to the index database {redact_url(url)}: {first_line(exc)}"
        ) from exc
    try:
        migrate(conn)
        register_vector(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def migrate(conn: Any) -> int:
    """Create the ``vector`` extension if needed and apply the missing migrations, in one
    transaction under :data:`MIGRATE_LOCK`. Returns the schema version.

    Raises:
        IndexStoreError: see :func:`connect`.
    """
    psycopg, _ = driver()
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
        if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is None:
            try:
                with conn.transaction():
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.Error as exc:
                raise IndexStoreError(
                    "the pgvector extension is not enabled in this database and this user may "
                    f"not enable it ({first_line(exc)}): run `CREATE EXTENSION vector;` as the "
                    "database owner, then try again"
                ) from exc
        conn.execute("CREATE TABLE IF NOT EXISTS memdir_schema (version integer NOT NULL)")
        row = conn.execute("SELECT version FROM memdir_schema").fetchone()
        version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            raise IndexStoreError(
                f"the index schema in this database ({version}) is newer than this memdir "
                f"({SCHEMA_VERSION}): upgrade memdir"
            )
        for migration in MIGRATIONS[version:]:
            conn.execute(migration)
        if row is None:
            conn.execute("INSERT INTO memdir_schema(version) VALUES (%s)", (SCHEMA_VERSION,))
        elif version < SCHEMA_VERSION:
            conn.execute("UPDATE memdir_schema SET version = %s", (SCHEMA_VERSION,))
    return SCHEMA_VERSION


def sql_literal(text: str) -> str:
    """``text`` as an SQL string literal (``standard_conforming_strings``, on since
    PostgreSQL 9.1: only the quote is special)."""
    return "'" + text.replace("'", "''") + "'"


def workspace_index_name(workspace_id: str, dims: int) -> str:
    """The name of a workspace's HNSW index of ``dims``-dimensional vectors (a hash: names
    are at most 63 bytes, workspace ids are not)."""
    digest = hashlib.sha256(workspace_id.encode()).hexdigest()[:16]
    return f"memdir_hnsw_{digest}_{dims}"


def workspace_index_state(conn: Any, workspace_id: str, dims: int) -> str:
    """``ready``, ``building`` (or left invalid by a killed build) or ``missing``."""
    row = conn.execute(
        "SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
        "WHERE c.relname = %s",
        (workspace_index_name(workspace_id, dims),),
    ).fetchone()
    if row is None:
        return "missing"
    return "ready" if row[0] else "building"


def ensure_workspace_index(conn: Any, workspace_id: str, dims: int) -> bool:
    """Build the workspace's own HNSW index (docs/design.md#vector-search) if it is missing,
    without blocking other writers (``CREATE INDEX CONCURRENTLY``; an invalid index a killed
    build left is dropped first). Call outside a transaction; only a writer should pay for it.

    Returns:
        True when the index is ready; False beyond pgvector's HNSW limit, or when another
        process is building it right now.
    """
    if not 0 < dims <= HNSW_MAX_DIMS:
        return False
    name = workspace_index_name(workspace_id, dims)
    key = advisory_key(f"hnsw:{name}")
    if not conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
        return False  # another process builds it
    try:
        state = workspace_index_state(conn, workspace_id, dims)
        if state == "ready":
            return True
        if state == "building":  # we hold the build lock: a killed build left it invalid
            conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
        literal = sql_literal(workspace_id)
        conn.execute(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON memdir_vectors USING hnsw "
            f"((embedding::vector({dims})) vector_cosine_ops) "
            f"WHERE workspace_id = {literal} AND dims = {dims}"
        )
        return True
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (key,))


class WorkspaceRows:
    """What the parts of :class:`~memdir.index.postgres.store.PostgresStore` share: its
    connection, its workspace and one-row queries."""

    conn: Any
    workspace_id: str

    def _one(self, query: str, params: Sequence[Any] | Mapping[str, Any]) -> Any:
        return self.conn.execute(query, params).fetchone()
