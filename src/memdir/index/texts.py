"""Chunk texts read back from the Markdown files, for an engine that does not keep them
(SQLite, docs/design.md#engines): :class:`ChunkTextReader`.

A search reads the texts of its candidates, often several chunks of the same few files, and
the same files again at the next search. The decoded lines of the most recently read files are
kept, keyed by the file's inode, modification time and size as ``stat`` gives them now, so an
unchanged file is not read again and a changed one always is. The engine still checks every
text against the chunk's hash.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence

from memdir.errors import MemdirError
from memdir.fileio import read_regular_file
from memdir.index.base import TextSpan
from memdir.index.sync import decode_markdown
from memdir.markdown.chunking import split_lines
from memdir.workspace import Workspace

#: How many files' decoded lines are kept (about 12 KB each in a generated vault).
CACHED_FILES = 256


class ChunkTextReader:
    """Reads chunk texts from a workspace's files (a :data:`~memdir.index.base.ChunkTexts`)."""

    def __init__(self, workspace: Workspace, cached_files: int = CACHED_FILES) -> None:
        self.workspace = workspace
        self._size = cached_files
        self._lines: OrderedDict[tuple[str, int, int, int], list[str]] = OrderedDict()
        self._lock = threading.Lock()  # searches and the background embedder share it

    def __call__(self, path: str, spans: Sequence[TextSpan]) -> list[str | None]:
        """The texts of chunks of the file indexed as ``path``, as the chunker saw them
        (decoded, control characters replaced, no CR). None for a span the file no longer
        has; all None when it cannot be read."""
        lines = self._file_lines(path)
        if lines is None:
            return [None] * len(spans)
        out: list[str | None] = []
        for span in spans:
            if not 1 <= span.start_line <= span.end_line <= len(lines):
                out.append(None)
                continue
            part = lines[span.start_line - 1 : span.end_line]
            if span.end_col is not None:
                part[-1] = part[-1][: span.end_col]
            part[0] = part[0][span.start_col :]
            out.append("\n".join(part))
        return out

    def _file_lines(self, path: str) -> list[str] | None:
        try:
            location = self.workspace.resolve_memory_path(path)
            st = os.stat(location)
        except (MemdirError, OSError, ValueError):
            return None
        key = (str(location), st.st_ino, st.st_mtime_ns, st.st_size)
        with self._lock:
            found = self._lines.get(key)
            if found is not None:
                self._lines.move_to_end(key)
                return found
        try:
            text, _ = decode_markdown(read_regular_file(location), path)
        except (MemdirError, OSError, ValueError):
            return None
        if text is None:
            return None
        lines = split_lines(text)
        with self._lock:
            self._lines[key] = lines
            while len(self._lines) > self._size:
                self._lines.popitem(last=False)
        return lines
