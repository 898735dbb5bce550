"""Changing a few entries of git's index without re-encoding the others.

dulwich reads and writes the index in Python, entry by entry: ~0.2 s for 2,000 files, seconds
for a large project's repository, on every audited write. memdir changes one to three entries,
so for the common index formats (versions 2 and 3, SHA-1) it splices them into the bytes as they
are: entries are found by walking their fixed-size headers, the changed ones are re-encoded,
extensions that describe entry positions or trees are dropped (git rebuilds them: ``TREE``,
``EOIE``, ``IEOT``, ``FSMN``) and the trailing checksum is recomputed. Anything else — version 4
(prefix-compressed paths), a SHA-256 repository, an extension git marks as required (split or
sparse index) — returns None and the caller takes dulwich's slower path or leaves the index
alone. Format: git's ``Documentation/gitformat-index.txt``.
"""

from __future__ import annotations

import bisect
import hashlib
import struct
from dataclasses import dataclass

_HEADER = struct.Struct(">4sLL")
_ENTRY = struct.Struct(">LLLLLLLLLL20sH")  # ctime s/ns, mtime s/ns, dev, ino, mode, uid, gid, size
_EXTENDED = 0x4000
_NAME_MASK = 0x0FFF
_STAGE_SHIFT = 12
_DROPPED = {b"TREE", b"EOIE", b"IEOT", b"FSMN"}
_SHA_LEN = 20
#: An index with no entries (a repository whose first commit memdir makes has none yet).
EMPTY_INDEX = (
    _HEADER.pack(b"DIRC", 2, 0)
    + hashlib.sha1(_HEADER.pack(b"DIRC", 2, 0), usedforsecurity=False).digest()
)


@dataclass(frozen=True)
class Stat:
    """The stat data git keeps per entry (all zero: git re-reads the file)."""

    ctime: tuple[int, int] = (0, 0)
    mtime: tuple[int, int] = (0, 0)
    dev: int = 0
    ino: int = 0
    uid: int = 0
    gid: int = 0
    size: int = 0


@dataclass(frozen=True)
class Entry:
    """An index entry as far as memdir cares: its blob, mode, stage and flags."""

    name: bytes
    sha: bytes  # 20 raw bytes
    mode: int
    stage: int
    flags: int
    extended_flags: int


@dataclass(frozen=True)
class ParsedIndex:
    """Where each entry of an index file is (entries are sorted by name, then stage)."""

    data: bytes
    version: int
    names: list[bytes]
    starts: list[int]  # one more than names: the last is where the extensions start

    def positions(self, name: bytes) -> range:
        """The indexes of ``name``'s entries (one per stage; empty when absent)."""
        first = bisect.bisect_left(self.names, name)
        last = bisect.bisect_right(self.names, name, lo=first)
        return range(first, last)

    def entry(self, i: int) -> Entry:
        fields = _ENTRY.unpack_from(self.data, self.starts[i])
        flags = fields[11]
        extended = 0
        if flags & _EXTENDED:
            (extended,) = struct.unpack_from(">H", self.data, self.starts[i] + _ENTRY.size)
        return Entry(
            self.names[i], fields[10], fields[6], (flags >> _STAGE_SHIFT) & 3, flags, extended
        )


def parse_index(data: bytes) -> ParsedIndex | None:
    """The entries' places in ``data``; None for a format this module does not splice (see
    the module docstring). Only each entry's flags and name are read."""
    if len(data) < _HEADER.size + _SHA_LEN:
        return None
    signature, version, count = _HEADER.unpack_from(data, 0)
    if signature != b"DIRC" or version not in (2, 3):
        return None
    flags_of = struct.Struct(">H").unpack_from
    pos = _HEADER.size
    limit = len(data) - _SHA_LEN
    names: list[bytes] = []
    starts: list[int] = []
    for _ in range(count):
        if pos + _ENTRY.size > limit:
            return None
        (flags,) = flags_of(data, pos + _ENTRY.size - 2)
        header = _ENTRY.size
        if flags & _EXTENDED:
            if version < 3:
                return None
            header += 2
        name_start = pos + header
        length = flags & _NAME_MASK
        name_end = data.index(b"\0", name_start) if length == _NAME_MASK else name_start + length
        names.append(data[name_start:name_end])
        starts.append(pos)
        pos += (header + (name_end - name_start) + 8) & ~7
    starts.append(pos)
    return ParsedIndex(data, version, names, starts)


def splice(index: ParsedIndex, updates: dict[bytes, tuple[bytes, int, Stat]]) -> bytes | None:
    """The index file with the stage-0 entries of ``updates`` (path → (raw sha, mode, stat))
    replaced or inserted; None when an extension is marked required (split or sparse index) or
    a path has conflict stages (a merge in progress: the caller leaves it alone)."""
    data = index.data
    extensions = _kept_extensions(data, index.starts[-1])
    if extensions is None:
        return None
    edits: list[tuple[int, int, bytes]] = []  # (start, end, replacement) in data
    added = 0
    for name, (sha, mode, stat) in sorted(updates.items()):
        found = index.positions(name)
        if len(found) > 1 or (found and index.entry(found[0]).stage != 0):
            return None
        if found:
            i = found[0]
            old = index.entry(i)
            raw = _encode(name, sha, mode, stat, old, index.version)
            edits.append((index.starts[i], index.starts[i + 1], raw))
        else:
            at = index.starts[bisect.bisect_left(index.names, name)]
            edits.append((at, at, _encode(name, sha, mode, stat, None, index.version)))
            added += 1
    pieces = [_HEADER.pack(b"DIRC", index.version, len(index.names) + added)]
    pos = _HEADER.size
    for start, end, raw in sorted(edits, key=lambda e: (e[0], e[1])):
        pieces.append(data[pos:start])
        pieces.append(raw)
        pos = end
    pieces.append(data[pos : index.starts[-1]])
    pieces.append(extensions)
    body = b"".join(pieces)
    return body + hashlib.sha1(body, usedforsecurity=False).digest()


def _kept_extensions(data: bytes, pos: int) -> bytes | None:
    """The extensions to keep, as bytes; None when one is marked required (lowercase)."""
    out = []
    limit = len(data) - _SHA_LEN
    while pos + 8 <= limit:
        signature, size = struct.unpack_from(">4sL", data, pos)
        if not 65 <= signature[0] <= 90:
            return None
        end = pos + 8 + size
        if end > limit:
            return None
        if signature not in _DROPPED:
            out.append(data[pos:end])
        pos = end
    return b"".join(out)


def _encode(
    name: bytes, sha: bytes, mode: int, stat: Stat, old: Entry | None, version: int
) -> bytes:
    extended = old.extended_flags if old is not None and version >= 3 else 0
    flags = (old.flags if old is not None else 0) & ~(_NAME_MASK | (3 << _STAGE_SHIFT))
    flags = (flags & ~_EXTENDED) | (_EXTENDED if extended else 0) | min(len(name), _NAME_MASK)
    fields = _ENTRY.pack(
        stat.ctime[0] & 0xFFFFFFFF,
        stat.ctime[1],
        stat.mtime[0] & 0xFFFFFFFF,
        stat.mtime[1],
        stat.dev & 0xFFFFFFFF,
        stat.ino & 0xFFFFFFFF,
        mode,
        stat.uid & 0xFFFFFFFF,
        stat.gid & 0xFFFFFFFF,
        stat.size & 0xFFFFFFFF,
        sha,
        flags,
    )
    if extended:
        fields += struct.pack(">H", extended)
    raw = fields + name
    return raw + b"\0" * (8 - len(raw) % 8)
