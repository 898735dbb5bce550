"""One question asked several ways (docs/design.md#search, step 10): the calling model's own
translation or paraphrase of the query (``memory_search``'s ``variants``) searched with it as
*one* question, not as further queries with result slots of their own.

Each variant gathers and scores its candidates as the query does (both legs, across
languages, fused); the pools are then merged chunk by chunk (:func:`merge_pools`): a chunk
found by several keeps the variant under which it scored best, with that variant's parts, so
the English translation of a Chinese question ranks the English note by how well *it* matches,
and the Chinese question the Chinese note. The rest of the pipeline (shortlist, MMR, the score
and the off-topic gate) runs once over the merged pool: the gate hides the results only when
every variant is off-topic, and a chunk's term coverage is its best under any variant.
"""

from __future__ import annotations

from collections.abc import Sequence

from memdir.search.types import Candidate


def merge_pools(pools: Sequence[Sequence[Candidate]]) -> list[Candidate]:
    """The candidates of every pool, each chunk once: the one with the highest fused score
    (the first pool's on a tie), in first-seen order."""
    best: dict[int, Candidate] = {}
    for pool in pools:
        for cand in pool:
            seq = cand.chunk.seq
            kept = best.get(seq)
            if kept is None or cand.score > kept.score:
                best[seq] = cand
    return list(best.values())


__all__ = ["merge_pools"]
