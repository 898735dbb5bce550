"""Which lines of a memory file memdir wrote, and which a person wrote.

``memdir forget`` removes generated lines freely and a person's lines only with ``--force``, so
it needs a reliable answer per line. The answer comes from the audit trail:

- Every record (a memdir commit's diff, or a ``.memdir/audit.jsonl`` line) says which lines it
  added to and removed from each file. Folding the records oldest first gives, per file, how
  many copies of each line text memdir put there and has not taken away: a multiset.
- A line of the file now is memdir's while that multiset still holds a copy of its text (copies
  are handed out top to bottom, so a person's identical line below memdir's stays the person's).
  A line memdir wrote and a person then edited has new text: it is the person's now.
- ``init`` records (the templates of ``memdir init --git``) do not count: the templates are the
  person's to keep or change.
- Dream promotions carry their own marker (``<!-- memdir:promoted … -->`` inside a generated
  block, :func:`memdir.markdown.generated.generated_indexes`), so they count as generated even when
  they predate the audit trail; a line a person typed inside a generated block does not.

What this cannot know: lines memdir wrote before the audit trail existed (other than dream
promotions) count as the person's, and in a git workspace a line that only a person's commit
added is the person's even if memdir wrote it earlier (``git commit -a`` after a failed audit).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memdir.audit.merge import line_key
from memdir.audit.records import AuditRecord
from memdir.markdown.generated import generated_indexes
from memdir.workspace.layout import MEMORY_FILE

#: Records of these components do not make lines memdir's (the person owns the templates).
NOT_GENERATED = frozenset({"init"})


@dataclass
class Provenance:
    """Per file, the texts of the lines memdir wrote and has not removed (with their counts)."""

    written: dict[str, Counter[str]] = field(default_factory=dict)
    #: Per file, when memdir last added each line text.
    written_at: dict[str, dict[str, datetime]] = field(default_factory=dict)

    @classmethod
    def from_records(cls, records: Iterable[AuditRecord]) -> Provenance:
        """Fold ``records`` (any order: they are sorted oldest first here)."""
        out = cls()
        for record in sorted(records, key=lambda r: r.time):
            if record.component in NOT_GENERATED:
                continue
            for change in record.files:
                counts = out.written.setdefault(change.path, Counter())
                for _, text in change.removed:
                    key = _key(text)
                    if counts[key] > 0:
                        counts[key] -= 1
                times = out.written_at.setdefault(change.path, {})
                for _, text in change.added:
                    counts[_key(text)] += 1
                    times[_key(text)] = record.time
        return out

    def written_time(self, path: str, line: str) -> datetime | None:
        """When memdir last wrote a line with this text to ``path`` (None: not memdir's)."""
        return self.written_at.get(path, {}).get(_key(line))

    def generated(self, path: str, lines: Sequence[str]) -> set[int]:
        """The 0-based indexes of the lines of ``path`` (its current lines) memdir wrote."""
        counts = Counter(self.written.get(path, Counter()))
        out: set[int] = set()
        for i, line in enumerate(lines):
            key = _key(line)
            if key.strip() and counts[key] > 0:
                counts[key] -= 1
                out.add(i)
        if path == MEMORY_FILE:
            out |= generated_indexes([line_key(x) for x in lines])
        return out


def _key(text: str) -> str:
    return line_key(text).rstrip()
