"""Reading Markdown: line-based chunking (CJK-aware)."""

from memdir.markdown.chunking import Chunk, chunk_markdown

__all__ = ["Chunk", "chunk_markdown"]
