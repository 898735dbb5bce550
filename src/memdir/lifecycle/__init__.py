"""Memory lifecycle: what writes to the Markdown files, and how (docs/design.md#lifecycle)."""

from memdir.lifecycle.archive import ArchiveResult, archive_session
from memdir.lifecycle.capture import AutoCapture
from memdir.lifecycle.compact import CompactionResult, compact_history, compaction_budget
from memdir.lifecycle.extract import ExtractionReport, extract_memories
from memdir.lifecycle.flush import FlushResult, flush_threshold, run_memory_flush
from memdir.lifecycle.write import WriteResult, normalise_memory_text, write_memory

__all__ = [
    "ArchiveResult",
    "AutoCapture",
    "CompactionResult",
    "ExtractionReport",
    "FlushResult",
    "WriteResult",
    "archive_session",
    "compact_history",
    "compaction_budget",
    "extract_memories",
    "flush_threshold",
    "normalise_memory_text",
    "run_memory_flush",
    "write_memory",
]
