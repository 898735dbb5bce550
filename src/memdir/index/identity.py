"""What an index was built with: the identity whose change makes its chunks or vectors invalid
(docs/design.md#index). :class:`~memdir.index.manager.IndexManager` compares it at open and
rebuilds on a difference; ``manager.index_identity`` re-exports it.
"""

from __future__ import annotations

from typing import Any

from memdir.config.settings import ChunkingConfig
from memdir.embeddings.base import Embedder
from memdir.markdown.chunking import CHUNKER_VERSION
from memdir.markdown.greedy import GREEDY_VERSION
from memdir.markdown.structure import STRUCTURE_VERSION
from memdir.text import TOKENIZER_VERSION


def index_identity(
    embedder: Embedder | None,
    chunking: ChunkingConfig,
    keyword_tokenizer: str = "memdir",
    *,
    schema: int,
) -> dict[str, Any]:
    """Everything that, when it changes, makes the stored chunks or vectors invalid (an index
    kept greedy has no ``structure``: its identity, and so its chunks, stay as they were)."""
    identity = {
        "keyword_tokenizer": keyword_tokenizer,
        "schema": schema,
        "tokenizer": TOKENIZER_VERSION,
        "provider": embedder.provider if embedder else "none",
        "model": embedder.model_id if embedder else "",
        "provider_key": embedder.provider_key if embedder else "",
        "dims": embedder.dims if embedder else 0,
        "chunk_tokens": chunking.tokens,
        "chunk_overlap": chunking.overlap,
        "chunker": GREEDY_VERSION if chunking.boundaries == "greedy" else CHUNKER_VERSION,
        "pooling": chunking.pooling,
        "line_vectors": bool(embedder) and (chunking.line_vectors or chunking.pooling == "lines"),
    }
    if chunking.structure and chunking.boundaries != "greedy":
        identity["structure"] = STRUCTURE_VERSION
        identity["pack_tokens"] = chunking.pack_tokens
    return identity
