"""Markdown files in the workspace that memdir does not index, and how to include them.

Only ``MEMORY.md``, ``memory/**``, ``skills/**`` and the configured ``[index] extra_paths`` are
indexed. Notes kept elsewhere in the workspace (``notes/``, a ``README.md`` at the root) were
silently left out; ``memdir index`` and ``memdir status`` now say so, with the
``extra_paths`` line that would include them. The workspace's own files that are read but not
searched (``USER.md``, ``AGENTS.md``, ``DREAMS.md``) are not reported.

The walk is bounded (:data:`SCAN_LIMIT` directory entries, :data:`MAX_DEPTH` levels, hidden and
dependency folders skipped), so a workspace inside a large project stays quick to report on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memdir.workspace.layout import MEMORY_DIR, MEMORY_FILE, OWNER_FILES, SKILLS_DIR, Workspace

#: Directory entries looked at, at most (the count is then a lower bound).
SCAN_LIMIT = 20_000
MAX_DEPTH = 8
#: Folders never looked into: dependencies and build output, not notes.
SKIP_FOLDERS = frozenset(
    {"node_modules", "__pycache__", "venv", "site-packages", "dist", "build", "target"}
)
EXAMPLES = 5


@dataclass(frozen=True)
class Unindexed:
    """What was found: how many files, a few of them, and per top-level folder how many.

    Attributes:
        count: Markdown files not indexed (a lower bound when ``truncated``).
        examples: up to :data:`EXAMPLES` of them, workspace-relative.
        folders: top-level folder (or ``.`` for the root) → files in it.
        truncated: the walk stopped at :data:`SCAN_LIMIT` entries.
    """

    count: int = 0
    examples: tuple[str, ...] = ()
    folders: dict[str, int] = field(default_factory=dict)
    truncated: bool = False

    def hint(self, config_file: Path) -> str:
        """How to include them: the ``extra_paths`` line for ``config_file``."""
        paths = sorted(f for f in self.folders if f != ".")
        if "." in self.folders:
            paths += [e for e in self.examples if "/" not in e]
        listed = ", ".join(f'"{p}"' for p in paths) or '"…"'
        return f"to index them, add under [index] in {config_file}: extra_paths = [{listed}]"

    def summary(self, config_file: Path) -> str:
        """One line for ``index`` and ``status``."""
        where = ", ".join(
            f"{name}/ ({n})" if name != "." else f"the workspace root ({n})"
            for name, n in sorted(self.folders.items())
        )
        more = "at least " if self.truncated else ""
        return (
            f"{more}{self.count} Markdown file(s) in the workspace are not indexed ({where}); "
            + self.hint(config_file)
        )

    def to_dict(self, config_file: Path) -> dict[str, Any]:
        return {
            "count": self.count,
            "examples": list(self.examples),
            "folders": dict(self.folders),
            "truncated": self.truncated,
            "hint": self.hint(config_file) if self.count else None,
            "summary": self.summary(config_file) if self.count else None,
        }


def find_unindexed(workspace: Workspace) -> Unindexed:
    """The Markdown files under the workspace root that no indexing rule covers."""
    root = workspace.root
    covered = {root / MEMORY_DIR, root / SKILLS_DIR, *workspace.extra_paths}
    known_root = {MEMORY_FILE, *OWNER_FILES}
    count, seen = 0, 0
    examples: list[str] = []
    folders: dict[str, int] = {}
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack and seen < SCAN_LIMIT:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            path = Path(entry.path)
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                is_file = entry.is_file(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if (
                    entry.name.startswith(".")
                    or entry.name in SKIP_FOLDERS
                    or path in covered
                    or depth + 1 > MAX_DEPTH
                ):
                    continue
                stack.append((path, depth + 1))
            elif is_file and entry.name.lower().endswith(".md"):
                rel = path.relative_to(root).as_posix()
                if (depth == 0 and entry.name in known_root) or path in covered:
                    continue
                count += 1
                top = rel.split("/", 1)[0] if "/" in rel else "."
                folders[top] = folders.get(top, 0) + 1
                if len(examples) < EXAMPLES:
                    examples.append(rel)
    return Unindexed(count, tuple(examples), folders, truncated=bool(stack))


__all__ = ["EXAMPLES", "SCAN_LIMIT", "Unindexed", "find_unindexed"]
