"""The companion model's codes kept beside the vectors (docs/design.md#search, "Across
languages"): every batch that embeds chunks also codes their texts with the companion
(:func:`code_batch`), written in the same short write; chunks embedded before there was a
companion (an index made by an older memdir, or with the companion off) get their codes
afterwards, in batches (:func:`backfill_codes`, ~20 times faster than embedding them).

A companion that cannot run (its model missing or failing) leaves the codes out: search then
ranks notes of the other language without it, never fails.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from memdir.index.base import IndexBackend

#: Texts coded per batch by :func:`backfill_codes`.
BACKFILL_BATCH = 256

_log = logging.getLogger(__name__)


class Coder(Protocol):
    """What the index needs of a companion model
    (:class:`memdir.embeddings.companion.Companion`)."""

    model_id: str

    def codes(self, texts: Sequence[str]) -> list[bytes]: ...


def code_batch(
    coder: Coder | None, batch: Sequence[tuple[int, str, str]]
) -> list[tuple[str, bytes]]:
    """``(hash, code)`` of a batch's distinct texts ``(seq, hash, text)``; empty without a
    companion or when it fails."""
    if coder is None or not batch:
        return []
    first = {digest: text for _, digest, text in batch}
    try:
        codes = coder.codes(list(first.values()))
    except Exception as exc:  # the companion is an aid: its failure never stops indexing
        _log.warning("companion model failed, codes left out: %s", exc)
        return []
    return list(zip(first, codes, strict=True))


def backfill_codes(
    store: IndexBackend,
    coder: Coder | None,
    *,
    lock: Callable[[], AbstractContextManager[object]] | None = None,
    limit: int | None = None,
    stop: Callable[[], bool] | None = None,
) -> int:
    """Code the embedded chunks that have no code yet, batch by batch (each written under
    ``lock``), at most ``limit``; ``stop`` is asked between batches. Returns how many texts
    were coded."""
    if coder is None:
        return 0
    done = 0
    while limit is None or done < limit:
        size = BACKFILL_BATCH if limit is None else min(BACKFILL_BATCH, limit - done)
        batch = store.chunks_without_companion(coder.model_id, size)
        items = code_batch(coder, batch)
        if not items:
            break
        with lock() if lock else contextlib.nullcontext():
            store.companion_put(coder.model_id, items)
        done += len(items)
        if len(batch) < size or (stop is not None and stop()):
            break
    return done


__all__ = ["BACKFILL_BATCH", "Coder", "backfill_codes", "code_batch"]
