"""The companion model's codes in the SQLite index (docs/design.md#search, "Across languages"):
one small code per chunk text, in the ``companion`` table (schema migration 3), keyed by the
model's ``embedding_models`` row and the text's hash, as the embedding cache keys vectors: a
text coded once keeps its code across edits elsewhere in its file and across rebuilds.

A code is opaque here (the companion decodes it: :mod:`memdir.embeddings.companion`); the table
is ``WITHOUT ROWID``, so a 64-byte code costs about 100 bytes with its key, and no second index.
"""

from __future__ import annotations

from collections.abc import Sequence

from memdir.index.sqlite.embeddings import SqliteEmbeddings
from memdir.index.sqlite.schema import hash_key

#: The dimension recorded for a companion's ``embedding_models`` row: its codes have no
#: vectors of their own in ``embeddings``, so the row only names the model.
CODE_DIMS = 0


class SqliteCompanion(SqliteEmbeddings):
    """The companion methods of :class:`~memdir.index.sqlite.store.SqliteStore` (a mixin)."""

    def _companion_model(self, model: str, *, create: bool) -> int | None:
        for found in self._models_of("companion", model, ""):
            return found.id
        if not create:
            return None
        return self._model("companion", model, "", CODE_DIMS).id

    def companion_put(self, model: str, items: Sequence[tuple[str, bytes]]) -> None:
        """Store the codes of text hashes that have none yet."""
        if not items:
            return
        with self.write():
            model_id = self._companion_model(model, create=True)
            before = self.conn.total_changes
            self.conn.executemany(
                "INSERT OR IGNORE INTO companion(model, hash, code) VALUES (?, ?, ?)",
                [(model_id, hash_key(h), bytes(c)) for h, c in items],
            )
            self._add_counts({"companion": self.conn.total_changes - before})

    def companion_by_seq(self, model: str, seqs: Sequence[int]) -> dict[int, bytes]:
        """The codes of these chunks' texts (chunks without one are left out)."""
        model_id = self._companion_model(model, create=False)
        out: dict[int, bytes] = {}
        if model_id is None:
            return out
        for start in range(0, len(seqs), 500):
            part = [int(s) for s in seqs[start : start + 500]]
            marks = ",".join("?" * len(part))
            rows = self.conn.execute(
                "SELECT c.seq, x.code FROM chunks c JOIN companion x "
                f"ON x.model = ? AND x.hash = c.hash WHERE c.seq IN ({marks})",
                [model_id, *part],
            )
            out.update({int(seq): bytes(code) for seq, code in rows})
        return out

    def chunks_without_companion(
        self, model: str, limit: int = 10_000
    ) -> list[tuple[int, str, str]]:
        """``(seq, hash, text)`` of embedded chunks whose text has no code yet, in ``seq``
        order (a chunk still waiting for its vector gets its code with it)."""
        model_id = self._companion_model(model, create=False)
        rows = self.conn.execute(
            "SELECT c.seq, c.hash FROM chunks c WHERE c.vector IS NOT NULL AND NOT EXISTS "
            "(SELECT 1 FROM companion x WHERE x.model = ? AND x.hash = c.hash) "
            "ORDER BY c.seq LIMIT ?",
            (-1 if model_id is None else model_id, limit),
        ).fetchall()
        texts = self.chunks_by_seq([int(seq) for seq, _ in rows])  # type: ignore[attr-defined]
        return [(int(seq), d.hex(), texts[seq].text) for seq, d in rows if seq in texts]


__all__ = ["CODE_DIMS", "SqliteCompanion"]
