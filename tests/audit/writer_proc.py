"""A process that makes audited writes and prints each finished one (the kill -9 and
concurrency tests run it with ``python writer_proc.py WORKSPACE NAME COUNT``).

Every fourth fact goes to a MEMORY.md section (an atomic replace), the others to the daily log
(a locked append); the line printed after a write means its record is stored.
"""

from __future__ import annotations

import sys
import zlib
from datetime import datetime

from memdir.lifecycle.write import write_memory
from memdir.workspace.layout import Workspace

NOW = datetime(2026, 12, 1, 9, 30)


def fact(name: str, i: int) -> str:
    """Distinct words per fact, so that no fact is a near duplicate of another."""
    seed = zlib.crc32(name.encode()) % 997
    return f"{name} wrote fact {i} code {(seed * 7919 + i) * 2654435761 % 16**12:012x}"


def main() -> None:
    root, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    workspace = Workspace(root)
    for i in range(count):
        section = "facts" if i % 4 == 3 else None
        result = write_memory(
            workspace,
            fact(name, i),
            target="memory" if section else "daily",
            section=section,
            now=NOW,
            via=f"writer {name}",
        )
        print(f"{i} {int(result.written)}", flush=True)


if __name__ == "__main__":
    main()
