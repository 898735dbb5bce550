"""The companion model's codes in PostgreSQL (docs/design.md#search, "Across languages"): one
small code per chunk text of a workspace, in ``memdir_companion`` (schema migration 3), keyed by
model and text hash like the embedding cache."""

from __future__ import annotations

from collections.abc import Sequence

from memdir.index.postgres.schema import WorkspaceRows


class PostgresCompanion(WorkspaceRows):
    """The companion methods of :class:`~memdir.index.postgres.store.PostgresStore` (a mixin:
    it reads the store's ``conn`` and ``workspace_id`` and writes through its ``write``)."""

    def companion_put(self, model: str, items: Sequence[tuple[str, bytes]]) -> None:
        if not items:
            return
        latest = dict(items)
        with self.write() as conn:  # type: ignore[attr-defined]
            conn.execute(
                "INSERT INTO memdir_companion(workspace_id, model, hash, code) "
                "SELECT %s, %s, u.hash, u.code FROM unnest(%s::text[], %s::bytea[]) "
                "AS u(hash, code) ON CONFLICT DO NOTHING",
                (self.workspace_id, model, list(latest), [bytes(c) for c in latest.values()]),
            )

    def companion_by_seq(self, model: str, seqs: Sequence[int]) -> dict[int, bytes]:
        if not seqs:
            return {}
        rows = self.conn.execute(
            "SELECT c.seq, x.code FROM memdir_chunks c JOIN memdir_companion x "
            "ON x.workspace_id = c.workspace_id AND x.model = %s AND x.hash = c.hash "
            "WHERE c.workspace_id = %s AND c.seq = ANY(%s)",
            (model, self.workspace_id, [int(s) for s in seqs]),
        ).fetchall()
        return {int(seq): bytes(code) for seq, code in rows}

    def chunks_without_companion(
        self, model: str, limit: int = 10_000
    ) -> list[tuple[int, str, str]]:
        rows = self.conn.execute(
            "SELECT c.seq, c.hash, c.text FROM memdir_chunks c WHERE c.workspace_id = %s "
            "AND EXISTS (SELECT 1 FROM memdir_vectors v WHERE v.seq = c.seq) AND NOT EXISTS "
            "(SELECT 1 FROM memdir_companion x WHERE x.workspace_id = c.workspace_id "
            "AND x.model = %s AND x.hash = c.hash) ORDER BY c.seq LIMIT %s",
            (self.workspace_id, model, limit),
        ).fetchall()
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]


__all__ = ["PostgresCompanion"]
