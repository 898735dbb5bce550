"""The bridge's word pairs compiled once into a small SQLite file in the user's cache
(``$MEMDIR_HOME/cache/bridge-<key>.sqlite``), so that a search in a new process looks up its
few words instead of reading the whole dictionary (~0.4 s).

The file is built from :mod:`memdir.bridge.sources` once per machine and dictionary version
(about 3 s: ``memdir init``, ``memdir index`` and a long-running server do it; a search only
starts it, see :func:`memdir.bridge.default_bridge`), written to a temporary file and renamed
into place, so two processes building it at once never see half a file. Where the cache cannot
be written (a read-only home), the pairs are kept in memory for the process instead.

Two tables: Chinese word → English stems, and English stem → Chinese words, each value a JSON
object of word → weight, best first, at most :data:`MAX_PER_WORD`. Going from English to
Chinese, a word glossed by many Chinese words (port: 端口, 港口, 口岸…) keeps the common ones
first: each weight is multiplied by the Chinese word's commonness (its frequency in jieba's
dictionary, which is also what segments the notes).
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import sqlite3
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

from memdir.bridge.sources import (
    Pair,
    dictionary_file,
    dictionary_pairs,
    glossary_pairs,
    sources_key,
)
from memdir.workspace.fileio import room_for_cache

#: Translations kept per word, best first.
MAX_PER_WORD = 8
#: The format of the compiled file (part of its name).
FORMAT = 1
#: A dictionary pair weighs this much of a glossary pair of the same standing: the glossary
#: holds the words notes use (负责人 → owner), the dictionary every sense of a word.
DICTIONARY_WEIGHT = 0.8


def _commonness(freq: int) -> float:
    """A Chinese word's prior as a translation, from its jieba frequency: ~1 for everyday
    words (10⁴ and more), 0.3 for rare or unknown ones."""
    if freq <= 0:
        return 0.3
    return min(1.0, 0.3 + 0.7 * math.log10(1 + freq) / 4.0)


def _word_frequencies() -> Mapping[str, int]:
    from memdir.text import _segmenter

    jieba = _segmenter()
    jieba.initialize()
    return jieba.dt.FREQ  # type: ignore[no-any-return]


def build_tables(
    pairs: Iterable[Pair], glossary: Iterable[Pair], freq: Mapping[str, int]
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """Chinese → English and English → Chinese, each word's translations best first."""
    zh_en: dict[str, dict[str, float]] = defaultdict(dict)
    en_zh: dict[str, dict[str, float]] = defaultdict(dict)

    common: dict[str, float] = {}
    for factor, source in ((DICTIONARY_WEIGHT, pairs), (1.0, glossary)):
        for zh, en, weight in source:
            weight = min(1.0, weight * factor)
            row = zh_en[zh]
            if weight > row.get(en, 0.0):
                row[en] = weight
            prior = common.get(zh)
            if prior is None:
                prior = common[zh] = _commonness(freq.get(zh, 0))
            back = en_zh[en]
            if weight * prior > back.get(zh, 0.0):
                back[zh] = weight * prior
    return _best(zh_en), _best(_as_tokens(_best(en_zh)))


def _as_tokens(table: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """Each Chinese translation as the words a query of it searches for (a word jieba splits,
    代码评审, weighs on its parts), so that an English search needs no segmentation."""
    from memdir.text import query_terms

    freq = _word_frequencies()
    out: dict[str, dict[str, float]] = {}
    for stem, row in table.items():
        forms: dict[str, float] = {}
        for word, weight in row.items():
            # A dictionary word is one token; only an other word (a glossary phrase) is cut.
            tokens = [word] if freq.get(word, 0) > 0 else (query_terms(word) or [word])
            for token in tokens:
                forms[token] = max(forms.get(token, 0.0), weight / len(tokens))
        out[stem] = forms
    return out


def _best(table: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    return {
        word: dict(sorted(row.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_PER_WORD])
        for word, row in table.items()
    }


class Compiled:
    """The compiled pairs: :meth:`to_english` and :meth:`to_chinese` look one word up.

    :meth:`open` reads a file compiled before; :meth:`build` compiles the sources (and keeps
    the result in the cache folder for the next process)."""

    def __init__(
        self,
        con: sqlite3.Connection | None = None,
        memory: tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._con = con
        self._memory = memory
        self.dictionary = dictionary_file() is not None

    @staticmethod
    def path(folder: Path) -> Path:
        """Where the compiled file of today's sources lives in ``folder``."""
        return folder / f"bridge-{FORMAT}-{sources_key()}.sqlite"

    @classmethod
    def open(cls, folder: Path) -> Compiled | None:
        """The pairs compiled before into ``folder``, or None when there are none (or they
        cannot be read)."""
        path = cls.path(folder)
        if not path.is_file():
            return None
        try:
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
            con.execute("SELECT 1 FROM zh_en LIMIT 1").fetchall()
        except sqlite3.Error:
            return None
        return cls(con=con)

    @classmethod
    def build(cls, folder: Path | None) -> Compiled:
        """Compile the pairs, kept in ``folder`` for later processes (in memory only when the
        folder cannot be written)."""
        if folder is not None:
            found = cls.open(folder)
            if found is not None:
                return found  # another process compiled them meanwhile
        tables = _tables()
        if folder is not None:
            with contextlib.suppress(OSError, sqlite3.Error):
                _write(cls.path(folder), *tables)
                found = cls.open(folder)
                if found is not None:
                    return found
        return cls(memory=tables)

    def to_english(self, word: str) -> dict[str, float]:
        """English stems for a Chinese word, best first (empty when it has none)."""
        return self._get("zh_en", 0, word)

    def to_chinese(self, stem: str) -> dict[str, float]:
        """Chinese words for an English stem, as a query searches for them (segmented), best
        first (empty when it has none)."""
        return self._get("en_zh", 1, stem)

    def _get(self, table: str, side: int, word: str) -> dict[str, float]:
        if self._memory is not None:
            return dict(self._memory[side].get(word, {}))
        if self._con is None:
            return {}
        with self._lock:
            row = self._con.execute(f"SELECT v FROM {table} WHERE k = ?", (word,)).fetchone()
        return dict(json.loads(row[0])) if row else {}

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None


def _tables() -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    path = dictionary_file()
    freq = _word_frequencies()
    pairs = dictionary_pairs(path, freq) if path is not None else iter(())
    return build_tables(pairs, glossary_pairs(), freq)


#: A temporary file of a compile older than this was left by a process that died meanwhile.
STALE_TMP_S = 3600.0
#: The compiled file's size, about; a cache never takes the last space of a disk, which the
#: index being written beside it needs more (the pairs are kept in memory instead).
COMPILED_BYTES = 10 * 1024 * 1024


def _write(
    path: Path, zh_en: Mapping[str, Mapping[str, float]], en_zh: Mapping[str, Mapping[str, float]]
) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not room_for_cache(path.parent, COMPILED_BYTES):
        raise OSError(errno.ENOSPC, "too little free space for the bridge's cache", str(path))
    for old in path.parent.glob("bridge-*.tmp"):  # left by a process killed while compiling
        with contextlib.suppress(OSError):
            if time.time() - old.stat().st_mtime > STALE_TMP_S:
                old.unlink()
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        con = sqlite3.connect(tmp)
        with con:
            for table, rows in (("zh_en", zh_en), ("en_zh", en_zh)):
                con.execute(f"CREATE TABLE {table} (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID")
                con.executemany(
                    f"INSERT INTO {table} VALUES (?, ?)",
                    (
                        (k, json.dumps({w: round(x, 4) for w, x in v.items()}, ensure_ascii=False))
                        for k, v in rows.items()
                    ),
                )
        con.close()
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


__all__ = ["COMPILED_BYTES", "FORMAT", "MAX_PER_WORD", "STALE_TMP_S", "Compiled", "build_tables"]
