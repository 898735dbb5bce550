"""Bring the index up to date with the files (docs/design.md#index), in two phases.

1. :func:`sync_files` — stat every indexable file; an unchanged (mtime, size) is skipped without
   reading; otherwise the content's sha256 decides; changed files are re-chunked and written
   (chunks + keyword tokens + vectors already in the embedding cache) in one transaction per
   file; files that vanished are pruned. Fast: no model runs here.
2. :func:`embed_pending` — chunks that still lack a vector are embedded in token-bounded
   batches, written to the cache and the index batch by batch. A provider failure leaves them
   pending (keyword search still finds them) and is reported, never raised. With
   ``chunking.pooling = "chunk"`` (the default) a chunk's text is embedded whole; with
   ``"lines"`` its vector is the normalised mean of its lines' embeddings
   (:func:`embedding_units`): every distinct line is embedded once and cached by its hash, so
   overlapping chunks cost no extra model time and an edited line re-embeds only itself
   (docs/design.md#chunking).

The caller holds the index write lock around each phase (see :mod:`memdir.index.manager`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

import numpy as np

from memdir.config.settings import ChunkingConfig
from memdir.embeddings.base import Embedder, Vectors, check_dims, l2_normalize, token_batches
from memdir.errors import PathNotAllowed, ProviderError
from memdir.index.base import FileRow, IndexBackend, NewChunk
from memdir.index.companion_codes import Coder, backfill_codes, code_batch
from memdir.markdown.chunking import Chunk, chunk_markdown, text_hash
from memdir.markdown.greedy import chunk_greedy
from memdir.markdown.structure import chunk_structured
from memdir.text import KEYWORD_TOKENIZERS, estimate_tokens
from memdir.workspace.fileio import read_regular_file
from memdir.workspace.layout import FileEntry, Skipped, Workspace, file_kind
from memdir.workspace.templates import TEMPLATE_LINES

#: Files larger than this are indexed for keyword search only (embedding them would take
#: minutes and one huge file is rarely a memory); status says so.
EMBED_MAX_BYTES = 2 * 1024 * 1024
#: Pieces of one long line that get a vector (~1,600 tokens); the rest of the line is found by
#: keyword search (a 1 MB single line used to take 1,400 embeddings and 13 minutes).
MAX_EMBEDDED_PIECES_PER_LINE = 8
#: Chunks of one file that get a vector (a 2 MB file of ordinary lines has ~6,000).
MAX_EMBEDDED_CHUNKS_PER_FILE = 10_000
#: A text with more undecodable or control characters than this share is not indexed.
BINARY_LIKE_SHARE = 0.10
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")

Progress = Callable[[str, int, int], None]


@dataclass
class SyncReport:
    """What one sync did."""

    scanned: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    chunks_written: int = 0
    embedded: int = 0
    cache_hits: int = 0
    #: Distinct texts the model embedded (``embedded`` counts chunks) and their estimated
    #: tokens.
    embedded_texts: int = 0
    embedded_tokens: int = 0
    pending_vectors: int = 0
    warnings: list[str] = field(default_factory=list)
    #: ``(path, reason)`` of entries the walk left out (symlinks, FIFOs, bad names…).
    skipped: list[Skipped] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed or self.embedded)


@dataclass(frozen=True)
class DirtyState:
    """Files whose (mtime, size) differ from the index, and indexed files that are gone."""

    changed: tuple[FileEntry, ...]
    deleted: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.changed or self.deleted)


def scan_dirty(
    store: IndexBackend,
    workspace: Workspace,
    skipped: list[Skipped] | None = None,
    folders: dict[str, int] | None = None,
) -> DirtyState:
    """Compare the files on disk with the index using ``lstat`` only (no reads); entries the
    walk leaves out (symlinks, FIFOs, names that are not UTF-8…) go to ``skipped``, the
    folders' modification times to ``folders``."""
    known = store.file_rows()
    changed: list[FileEntry] = []
    seen: set[str] = set()
    for entry in workspace.iter_files(skipped, folders):
        seen.add(entry.path)
        row = known.get(entry.path)
        if row is None or row.mtime_ns != entry.mtime_ns or row.size != entry.size:
            changed.append(entry)
    deleted = tuple(sorted(set(known) - seen))
    return DirtyState(tuple(changed), deleted)


def chunk_id(source: str, path: str, start: int, end: int, chunk_hash: str, model: str) -> str:
    """sha256 of ``source:path:start:end:hash:model`` (docs/design.md#chunking)."""
    key = f"{source}:{path}:{start}:{end}:{chunk_hash}:{model}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def sync_files(
    store: IndexBackend,
    workspace: Workspace,
    *,
    chunking: ChunkingConfig,
    embedder: Embedder | None,
    dirty: DirtyState | None = None,
    progress: Progress | None = None,
    report: SyncReport | None = None,
    keyword_tokenizer: str = "memdir",
) -> SyncReport:
    """Phase 1: re-chunk changed files, prune deleted ones (see the module docstring)."""
    tokenize = KEYWORD_TOKENIZERS[keyword_tokenizer]
    started = time.perf_counter()
    report = report or SyncReport()
    if dirty is None:
        dirty = scan_dirty(store, workspace, report.skipped)
    # The changed files' rows, read now (under the writer lock), not when they were found to
    # have changed: another process may have synced them since. Only theirs: ~35 ms less than
    # every file's row at 10,000 files.
    known = store.file_rows([e.path for e in dirty.changed]) if dirty.changed else {}
    model = embedder.model_id if embedder else "fts"
    total = len(dirty.changed)
    report.scanned += total
    vanished: list[str] = list(dirty.deleted)
    for done, entry in enumerate(dirty.changed, start=1):
        row = known.get(entry.path)
        if not _sync_one(store, entry, row, chunking, embedder, model, report, tokenize):
            vanished.append(entry.path)
        if progress:
            progress("files", done, total)
    if vanished:
        report.removed += store.delete_files(vanished)
    report.seconds += time.perf_counter() - started
    return report


def _sync_one(
    store: IndexBackend,
    entry: FileEntry,
    row: FileRow | None,
    chunking: ChunkingConfig,
    embedder: Embedder | None,
    model: str,
    report: SyncReport,
    tokenize: Callable[[str], str],
) -> bool:
    """Index one file; returns False when the file is gone (to be pruned)."""
    try:
        before = entry.abspath.lstat()
        if not stat.S_ISREG(before.st_mode):
            return False
        data = read_regular_file(entry.abspath)
        after = os.lstat(entry.abspath)
    except (FileNotFoundError, PathNotAllowed):  # gone, or swapped for a link or a FIFO
        return False
    except OSError as exc:
        report.warnings.append(f"{entry.path}: cannot be read ({exc.strerror}); skipped")
        return row is not None
    digest = hashlib.sha256(data).hexdigest()
    # Changed while we read it: record an impossible mtime so the next sync reads it again.
    mtime_ns = after.st_mtime_ns if _same_stat(before, after) else -1
    if row is not None and row.hash == digest and row.warning is None:
        store.touch_file(entry.path, mtime_ns, after.st_size)
        report.unchanged += 1
        return True
    try:  # one file that cannot be decoded or chunked must not stop the others
        text, warning = decode_markdown(data, entry.path)
        pieces = chunk_file(entry.path, text, chunking) if text is not None else []
    except (ValueError, RecursionError, MemoryError) as exc:
        text, pieces = None, []
        warning = f"cannot be chunked ({type(exc).__name__}: {exc}): not indexed"
    chunks: list[NewChunk] = []
    if text is not None:
        flags, capped = embed_plan(pieces)
        if capped and embedder is not None:
            warning = _join(warning, f"{capped} chunks of very long lines: keyword search only")
        embeddable = embedder is not None and len(data) <= EMBED_MAX_BYTES
        if embedder is not None and not embeddable:
            warning = _join(
                warning,
                f"too large to embed ({len(data) / 1e6:.1f} MB > {EMBED_MAX_BYTES / 1e6:.0f} MB)"
                ": keyword search only",
            )
        keys = [vector_key(p.hash, chunking.pooling) for p in pieces]
        cached = (
            store.cache_get(embedder.provider, embedder.model_id, embedder.provider_key, keys)
            if embedder is not None and embeddable
            else {}
        )
        report.cache_hits += sum(1 for k in keys if k in cached)
        for piece, key, embed in zip(pieces, keys, flags, strict=True):
            chunks.append(
                NewChunk(
                    id=chunk_id(
                        entry.source,
                        entry.path,
                        piece.start_line,
                        piece.end_line,
                        piece.hash,
                        model,
                    ),
                    start_line=piece.start_line,
                    end_line=piece.end_line,
                    hash=piece.hash,
                    text=piece.text,
                    tokens=tokenize(piece.text),
                    embedding=cached.get(key) if embed else None,
                    embed=embeddable and embed,
                    vector_key=key,
                    start_col=piece.start_col,
                    end_col=piece.end_col,
                )
            )
    if warning:
        report.warnings.append(f"{entry.path}: {warning}")
    store.replace_file(
        path=entry.path,
        source=entry.source,
        hash=digest,
        mtime_ns=mtime_ns,
        size=after.st_size,
        warning=warning,
        model=model,
        chunks=chunks,
    )
    if row is None:
        report.added += 1
    else:
        report.updated += 1
    report.chunks_written += len(chunks)
    return True


def chunk_file(path: str, text: str, chunking: ChunkingConfig) -> list[Chunk]:
    """The chunks of one file (docs/design.md#chunking): daily logs and session notes in
    content-defined windows; other notes, with ``chunking.structure``, one block a chunk under
    its headings (:mod:`memdir.markdown.structure`); everything greedily in an index built
    that way."""
    if chunking.boundaries == "greedy":
        return chunk_greedy(text, max_tokens=chunking.tokens, overlap_tokens=chunking.overlap)
    if chunking.structure and file_kind(path) not in ("daily", "archive"):
        return chunk_structured(
            text,
            max_tokens=chunking.tokens,
            overlap_tokens=chunking.overlap,
            skip=TEMPLATE_LINES,
            pack_tokens=None if chunking.pack_tokens < 0 else chunking.pack_tokens,
        )
    return chunk_markdown(text, max_tokens=chunking.tokens, overlap_tokens=chunking.overlap)


def decode_markdown(data: bytes, path: str) -> tuple[str | None, str | None]:
    """Decode a file's bytes: ``(text, warning)``; text is None for a binary file.

    Binary: a NUL byte in the first 8 KiB, or more than :data:`BINARY_LIKE_SHARE` of the text
    undecodable or control characters (random bytes, a GBK file). NUL and other control
    characters further in are replaced by U+FFFD, so they never reach an index or a snippet.
    """
    if b"\x00" in data[:8192]:
        return None, "binary file (NUL bytes): not indexed"
    try:
        text = data.decode("utf-8")
        warning = None
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", errors="replace")
        warning = f"invalid UTF-8 at byte {exc.start}: indexed with replacement characters"
    text = text.removeprefix("\ufeff")
    controls = len(_CONTROL_RE.findall(text))
    odd = controls + text.count("\ufffd")
    if text and odd > BINARY_LIKE_SHARE * len(text):
        share = 100 * odd / len(text)
        return None, (
            f"binary-like ({share:.0f}% undecodable or control characters; is it UTF-8?)"
            ": not indexed"
        )
    if controls:
        text = _CONTROL_RE.sub("\ufffd", text)
        warning = _join(warning, f"{controls} control characters (NUL…) replaced by U+FFFD")
    return text, warning


def vector_key(chunk_hash: str, pooling: str) -> str:
    """The embedding-cache key of a chunk's vector: its text's hash when the chunk is embedded
    whole, a derived key when the vector is pooled from its lines (a different vector)."""
    if pooling == "chunk":
        return chunk_hash
    return hashlib.sha256(f"{pooling}-mean:{chunk_hash}".encode()).hexdigest()


def embedding_units(text: str) -> list[str]:
    """The texts whose embeddings a ``lines``-pooled chunk averages: its non-blank lines."""
    units = [line.strip() for line in text.split("\n")]
    return [u for u in units if u] or [text]


def embed_pending(
    store: IndexBackend,
    embedder: Embedder,
    *,
    batch_tokens: int,
    pooling: str = "chunk",
    line_vectors: bool = False,
    limit: int | None = None,
    progress: Progress | None = None,
    report: SyncReport | None = None,
    lock: Callable[[], AbstractContextManager[object]] | None = None,
    companion: Coder | None = None,
) -> SyncReport:
    """Phase 2: embed chunks that lack a vector (see the module docstring), each batch coded
    by the ``companion`` too; then code the embedded chunks that have no code yet.

    Args:
        pooling: ``chunk`` embeds each chunk's text; ``lines`` averages its lines' embeddings.
        line_vectors: with ``chunk`` pooling, also put each line's embedding in the cache
            (search scores the lines of a candidate with them; ``lines`` pooling has them).
        limit: embed at most this many chunks (the rest stays pending).
        lock: a context-manager factory taken around each batch's write, so other
            processes can sync between batches.
    """
    started = time.perf_counter()
    report = report or SyncReport()
    pending = store.chunks_without_vectors(limit=limit or 10_000_000)
    total = len(pending)
    # One embedding per distinct text (chunks with the same text share it), in batches of
    # texts of about the same length.
    chunks_of: dict[str, list[int]] = {}
    first: dict[str, tuple[int, str, str]] = {}
    for seq, digest, text in pending:
        chunks_of.setdefault(digest, []).append(seq)
        first.setdefault(digest, (seq, digest, text))
    unique = sorted(first.values(), key=lambda item: (estimate_tokens(item[2]), item[1]))
    done = 0
    for start, end in token_batches([text for _, _, text in unique], batch_tokens):
        batch = unique[start:end]
        batch_started = time.perf_counter()
        try:
            vectors, cache_items = embed_chunks(store, embedder, batch, pooling, line_vectors)
        except ProviderError as exc:
            report.warnings.append(f"embedding failed, keyword search only for now: {exc}")
            break
        codes = code_batch(companion, batch)
        # Every chunk of each text gets the text's vector.
        shared = [(seq, digest, text) for _, digest, text in batch for seq in chunks_of[digest]]
        copies = [i for i, (_, digest, _) in enumerate(batch) for _ in chunks_of[digest]]
        write_vectors(
            store,
            embedder,
            shared,
            vectors[copies],
            cache_items,
            pooling=pooling,
            lock=lock,
            seconds=time.perf_counter() - batch_started,
            codes=(companion.model_id, codes) if companion is not None else None,
        )
        done += len(shared)
        report.embedded += len(shared)
        report.embedded_texts += len(batch)
        report.embedded_tokens += sum(estimate_tokens(text) for _, _, text in batch)
        if progress:
            progress("embeddings", done, total)
    report.pending_vectors = total - done
    if report.pending_vectors == 0:
        backfill_codes(store, companion, lock=lock)
    report.seconds += time.perf_counter() - started
    return report


#: Meta key of the last embedding batch's throughput (``memdir status`` estimates from it).
EMBED_RATE_KEY = "embed_rate"


def embed_chunks(
    store: IndexBackend,
    embedder: Embedder,
    batch: Sequence[tuple[int, str, str]],
    pooling: str = "chunk",
    line_vectors: bool = False,
) -> tuple[Vectors, list[tuple[str, Vectors]]]:
    """Embed one batch of pending chunks ``(seq, hash, text)``: their vectors, and the
    embedding-cache entries to write with them (with ``line_vectors``, also the embeddings of
    their lines, see :func:`scoring_units`). Nothing is written here.

    Raises:
        ProviderError: the embedder failed or returned the wrong shape.
    """
    who = f"{embedder.provider}/{embedder.model_id}"
    if pooling != "chunk":
        return _pool_lines(store, embedder, list(batch), pooling, who)
    vectors = check_dims(
        embedder.embed_documents([text for _, _, text in batch]), len(batch), embedder.dims, who=who
    )
    cache_items = [(h, v) for (_, h, _), v in zip(batch, vectors, strict=True)]
    if line_vectors:
        texts = [t for _, _, t in batch]
        _, fresh = line_unit_vectors(store, embedder, texts, who, scoring_units)
        cache_items += fresh
    return vectors, cache_items


def write_vectors(
    store: IndexBackend,
    embedder: Embedder,
    batch: Sequence[tuple[int, str, str]],
    vectors: Vectors,
    cache_items: Sequence[tuple[str, Vectors]],
    *,
    pooling: str = "chunk",
    lock: Callable[[], AbstractContextManager[object]] | None = None,
    seconds: float | None = None,
    codes: tuple[str, Sequence[tuple[str, bytes]]] | None = None,
) -> None:
    """Store a batch's vectors and cache entries in one short write (under ``lock``), and its
    throughput when ``seconds`` (the time the model took) is given. Each chunk's vector is
    linked to its cache key (:func:`vector_key`), so it is stored once. ``codes``: the
    companion model's name and its codes of the batch's texts
    (:mod:`memdir.index.companion_codes`), written in the same write."""
    ids = (embedder.provider, embedder.model_id, embedder.provider_key)
    with lock() if lock else contextlib.nullcontext():
        store.cache_put(*ids, cache_items)
        if codes is not None and codes[1]:
            store.companion_put(codes[0], codes[1])
        store.set_vectors(
            [
                (seq, vector_key(digest, pooling), vec)
                for (seq, digest, _), vec in zip(batch, vectors, strict=True)
            ]
        )
        if seconds is not None and seconds > 0:
            rate = {"chunks": len(batch), "seconds": round(seconds, 4), "at": time.time()}
            with store.write():
                store.meta_set(EMBED_RATE_KEY, json.dumps(rate))


def embed_rate(store: IndexBackend) -> tuple[float, float] | None:
    """``(chunks per second, time written)`` of the last embedding batch written to this
    index (by any process), if any."""
    raw = store.meta_get(EMBED_RATE_KEY)
    try:
        data = json.loads(raw) if raw else None
        if not data:
            return None
        return float(data["chunks"]) / float(data["seconds"]), float(data["at"])
    except (ValueError, KeyError, TypeError, ZeroDivisionError):
        return None


#: A line holding at least this share of its chunk's text is scored with the chunk's own
#: vector: its embedding would be nearly the same (a piece of a long paragraph, a chunk with a
#: heading and one line), so it is not embedded again.
DOMINANT_LINE = 0.8


def scoring_units(text: str) -> list[str]:
    """The lines of a chunk that get their own embedding for line scoring: every
    :func:`embedding_units` line shorter than :data:`DOMINANT_LINE` of the chunk."""
    size = len(text.strip())
    return [u for u in embedding_units(text) if len(u) < DOMINANT_LINE * size]


def line_unit_vectors(
    store: IndexBackend,
    embedder: Embedder,
    texts: Sequence[str],
    who: str,
    units: Callable[[str], list[str]] | None = None,
) -> tuple[dict[str, Vectors], list[tuple[str, Vectors]]]:
    """The embeddings of the lines of ``texts`` (``units(text)``, default
    :func:`embedding_units`): those already in the cache and the ones embedded now (also
    returned alone, to be written to the cache).

    Raises:
        ProviderError: the embedder failed or returned the wrong shape.
    """
    ids = (embedder.provider, embedder.model_id, embedder.provider_key)
    split = units or embedding_units
    wanted = {text_hash(u): u for text in texts for u in split(text)}
    known = store.cache_get(*ids, list(wanted))
    missing = [h for h in wanted if h not in known]
    fresh: list[tuple[str, Vectors]] = []
    if missing:
        embedded = check_dims(
            embedder.embed_documents([wanted[h] for h in missing]),
            len(missing),
            embedder.dims,
            who=who,
        )
        fresh = list(zip(missing, embedded, strict=True))
        known.update(fresh)
    return known, fresh


def embed_missing_lines(
    store: IndexBackend,
    embedder: Embedder,
    *,
    batch_tokens: int,
    report: SyncReport,
    lock: Callable[[], AbstractContextManager[object]] | None = None,
) -> bool:
    """Put the line embeddings of every stored chunk in the cache where they are missing:
    after a rebuild whose chunk vectors all came from the cache (e.g. ``line_vectors`` just
    turned on), no chunk is pending, yet its lines were never embedded. Returns False when
    the embedder failed (a warning is added; the rest stays missing)."""
    who = f"{embedder.provider}/{embedder.model_id}"
    ids = (embedder.provider, embedder.model_id, embedder.provider_key)
    seqs, _ = store.all_vectors()
    rows = store.chunks_by_seq([int(s) for s in seqs])
    wanted = {text_hash(u): u for row in rows.values() for u in scoring_units(row.text)}
    known = store.cache_get(*ids, list(wanted))
    missing = [u for h, u in wanted.items() if h not in known]
    for start, end in token_batches(missing, batch_tokens):
        try:
            _, fresh = line_unit_vectors(store, embedder, missing[start:end], who)
        except ProviderError as exc:
            report.warnings.append(f"embedding lines failed (line scoring degraded): {exc}")
            return False
        with lock() if lock else contextlib.nullcontext():
            store.cache_put(*ids, fresh)
    return True


def _pool_lines(
    store: IndexBackend,
    embedder: Embedder,
    batch: list[tuple[int, str, str]],
    pooling: str,
    who: str,
) -> tuple[Vectors, list[tuple[str, Vectors]]]:
    """Vectors of ``batch``'s chunks ``(seq, hash, text)`` as the normalised mean of their
    lines' embeddings, and the cache entries to write (the new line vectors and the pooled
    chunk vectors).

    Raises:
        ProviderError: the embedder failed or returned the wrong shape.
    """
    known, fresh = line_unit_vectors(store, embedder, [t for _, _, t in batch], who)
    units = [[text_hash(u) for u in embedding_units(text)] for _, _, text in batch]
    vectors = l2_normalize(
        np.stack(
            [np.mean([np.asarray(known[h], dtype=np.float32) for h in u], axis=0) for u in units]
        )
    )
    pooled = [(vector_key(h, pooling), v) for (_, h, _), v in zip(batch, vectors, strict=True)]
    return vectors, fresh + pooled


def embed_plan(pieces: Sequence[Chunk]) -> tuple[list[bool], int]:
    """Which chunks of a file get a vector, and how many do not: at most
    :data:`MAX_EMBEDDED_PIECES_PER_LINE` pieces of one long line and
    :data:`MAX_EMBEDDED_CHUNKS_PER_FILE` chunks per file (the rest: keyword search only), so a
    pathological file has a bounded embedding cost."""
    per_line: Counter[int] = Counter()
    flags: list[bool] = []
    embedded = 0
    for piece in pieces:
        ok = embedded < MAX_EMBEDDED_CHUNKS_PER_FILE
        if piece.start_line == piece.end_line:
            per_line[piece.start_line] += 1
            ok = ok and per_line[piece.start_line] <= MAX_EMBEDDED_PIECES_PER_LINE
        embedded += ok
        flags.append(ok)
    return flags, len(flags) - embedded


def _same_stat(a: os.stat_result, b: os.stat_result) -> bool:
    return a.st_mtime_ns == b.st_mtime_ns and a.st_size == b.st_size


def _join(first: str | None, second: str) -> str:
    return f"{first}; {second}" if first else second
