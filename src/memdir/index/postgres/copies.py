"""Every host's copy of a file in the shared index (issue 37; docs/design.md#engines): which
copy holds a chunk a search found, and another host's copy read back from its chunks for
``memory_get`` (docs/design.md#memory_get). Rows: ``memdir_copies`` and ``memdir_holders``
(schema migration 4)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from memdir.index.base import ChunkRow, FileCopy
from memdir.index.postgres.schema import WorkspaceRows


class PostgresCopies(WorkspaceRows):
    """The copy-aware reads of :class:`~memdir.index.postgres.store.PostgresStore` (a mixin:
    it reads the store's ``conn``, ``workspace_id`` and ``host``)."""

    host: str

    def chunks_by_seq(self, seqs: Sequence[int]) -> dict[int, ChunkRow]:
        """The chunks; one this host's copy does not hold is shown at its lines in this host's
        copy when that copy has the same text at the same path, else with the host whose copy
        holds it (``ChunkRow.copy``), so a hit is always read where it is."""
        if not seqs:
            return {}
        rows = self.conn.execute(
            "SELECT c.seq, c.id, c.path, c.source, c.start_line, c.end_line, c.text, c.hash, "
            "(SELECT min(h.host) FROM memdir_holders h WHERE h.seq = c.seq), "
            "EXISTS (SELECT 1 FROM memdir_holders h WHERE h.seq = c.seq AND h.host = %s) "
            "FROM memdir_chunks c WHERE c.workspace_id = %s AND c.seq = ANY(%s)",
            (self.host, self.workspace_id, [int(s) for s in seqs]),
        ).fetchall()
        out = {int(r[0]): ChunkRow(int(r[0]), *r[1:7]) for r in rows}
        elsewhere = [r for r in rows if r[8] is not None and not r[9]]
        if not elsewhere:
            return out
        here = {
            (str(r[0]), str(r[1])): (int(r[2]), int(r[3]))
            for r in self.conn.execute(
                "SELECT c.path, c.hash, c.start_line, c.end_line FROM memdir_holders h "
                "JOIN memdir_chunks c ON c.seq = h.seq WHERE h.workspace_id = %s "
                "AND h.host = %s AND h.path = ANY(%s) AND c.hash = ANY(%s)",
                (
                    self.workspace_id,
                    self.host,
                    list({str(r[2]) for r in elsewhere}),
                    list({str(r[7]) for r in elsewhere}),
                ),
            ).fetchall()
        }
        for r in elsewhere:
            seq, row = int(r[0]), out[int(r[0])]
            lines = here.get((row.path, str(r[7])))
            if lines is not None:
                out[seq] = replace(row, start_line=lines[0], end_line=lines[1])
            else:
                out[seq] = replace(row, copy=str(r[8]))
        return out

    def file_copy(self, path: str, host: str | None = None) -> FileCopy | None:
        """``host``'s copy of ``path`` as its chunks hold it (default: the newest copy
        another host indexed); see :class:`~memdir.index.base.SharedCopies`."""
        if host is None:
            row = self._one(
                "SELECT host FROM memdir_copies WHERE workspace_id = %s AND path = %s "
                "AND host <> %s ORDER BY indexed_at DESC, host LIMIT 1",
                (self.workspace_id, path, self.host),
            )
            if row is None:
                return None
            host = str(row[0])
        rows = self.conn.execute(
            "SELECT c.start_line, c.end_line, c.text FROM memdir_holders h JOIN memdir_chunks c "
            "ON c.seq = h.seq WHERE h.workspace_id = %s AND h.host = %s AND h.path = %s "
            "ORDER BY c.start_line",
            (self.workspace_id, host, path),
        ).fetchall()
        if not rows:
            return None
        lines: dict[int, str] = {}
        for start, end, text in rows:
            own = str(text).split("\n")
            if len(own) >= end - start + 1:  # context headings come first, if any
                own = own[len(own) - (end - start + 1) :]
                for n, line in enumerate(own, start=int(start)):
                    lines.setdefault(n, line)
        return FileCopy(host, lines, max(lines, default=0))


__all__ = ["PostgresCopies"]
