"""Tokenising, shared by the keyword index, MMR and deduplication.

- Latin scripts: lower-cased runs of letters and digits (``redis``, ``6379``, ``v2``); words of
  letters only are stemmed with the Snowball English stemmer (``migrations`` → ``migrat``), at
  index and query time alike. ``node.js`` gives ``node`` and ``js``.
- Chinese: dictionary segmentation with jieba. Indexed text uses jieba's search mode, which
  emits a long word *and* the words inside it (分布式 → 分布, 布式, 分布式), so a query for a
  shorter word still matches; queries use the precise mode.
- Stopwords (English and Chinese) are dropped from queries, never from the stored text.
- :func:`estimate_tokens` is the CJK-aware count (docs/design.md#chunking): 4 chars per token,
  a CJK char counts as one token.

The stored tokens are exactly what FTS5's ``unicode61`` tokenizer (no diacritic folding) splits
them into, so memdir can count term frequencies itself (see :mod:`memdir.index.bm25`).

Bump :data:`TOKENIZER_VERSION` whenever indexed tokens change: it is part of the index identity,
so a change triggers a full reindex.
"""

from __future__ import annotations

import logging
import math
import os
import re
import sys
import threading
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

TOKENIZER_VERSION = "2"

# CJK Unified Ideographs (+ Ext A, compatibility), kana, hangul: one token per character.
_CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK_RE = re.compile(f"[{_CJK_CLASS}]")
# For token estimates, CJK punctuation (，。：) and full-width forms count as one token each too.
_CJK_TOKEN_RE = re.compile(f"[{_CJK_CLASS}\u3000-\u303f\uff00-\uffef]")
_SEGMENT_RE = re.compile(f"([{_CJK_CLASS}]+)|([^\\W_]+)", re.UNICODE)
_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)

ENGLISH_STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just let me more most my myself no nor not now of off on once only or other our
    ours ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    s t don didn doesn isn wasn weren won wouldn shouldn couldn ll re ve d m o y
    """.split()  # noqa: SIM905 - a word list reads better as text
)

CHINESE_STOPWORDS = frozenset(
    """
    的 了 在 是 我 有 和 就 不 人 都 一 一个 上 也 很 到 说 要 去 你 会 着 没有 看 好 自己
    这 那 他 她 它 们 我们 你们 他们 她们 它们 这个 那个 这些 那些 什么 怎么 怎样 如何
    为什么 哪 哪里 哪个 吗 呢 吧 啊 呀 哦 嗯 之 与 及 或 而 并 但 但是 因为 所以 如果 虽然
    然后 以及 还是 还 又 再 被 把 让 给 对 对于 从 向 于 以 由 为 为了 等 等等 个 些 之后
    之前 时候 可以 能 能够 已经 曾经 过 吗 么 所 其 此 该 每 各 请 问 呃 地 得 啥 多少 几
    哪些 谁
    """.split()  # noqa: SIM905 - a word list reads better as text
)

STOPWORDS = ENGLISH_STOPWORDS | CHINESE_STOPWORDS

_jieba_lock = threading.Lock()
_jieba: Any = None


def _segmenter() -> Any:
    """Load jieba once, quietly (it logs its dictionary build to stderr by default).

    Only text with CJK characters needs it (an English search never loads it). Its dictionary
    is parsed once into a cache file kept under ``$MEMDIR_HOME/cache`` (jieba's default, the
    system temporary folder, is emptied on reboot and the parse then costs a second again).
    """
    global _jieba
    if _jieba is None:
        with _jieba_lock:
            if _jieba is None:
                jieba = _import_jieba()
                jieba.setLogLevel(logging.WARNING)
                cache = _jieba_cache_dir()
                if cache is not None:
                    jieba.dt.tmp_dir = str(cache)
                    jieba.initialize()
                else:  # no room for its ~9 MB cache: parsed in memory, nothing written
                    dt = jieba.dt
                    dt.FREQ, dt.total = dt.gen_pfdict(dt.get_dict_file())
                    dt.initialized = True
                _jieba = jieba
    return _jieba


def load_segmenter() -> None:
    """Load jieba now (~1 s for its dictionary), so that the first Chinese text to segment
    does not wait for it; a server does this before its first search."""
    _segmenter()


def _import_jieba() -> Any:
    """``import jieba`` without its optional ``pkg_resources`` import (setuptools' slowest
    module, ~0.2 s at every start): jieba then opens its data files itself."""
    if "pkg_resources" in sys.modules:
        import jieba

        return jieba
    sys.modules["pkg_resources"] = None  # type: ignore[assignment]  # makes it an ImportError
    try:
        import jieba
    finally:
        del sys.modules["pkg_resources"]
    return jieba


#: What jieba's parsed dictionary takes on disk.
JIEBA_CACHE_BYTES = 10 * 1024 * 1024


def _jieba_cache_dir() -> Path | None:
    """Where jieba keeps its parsed dictionary, or None to keep it in memory only: a folder
    that cannot be written, or a disk too full for it (jieba leaves a partial temporary file
    behind when its write fails, which would take the last space the index needs)."""
    from memdir.config.settings import memdir_home
    from memdir.workspace.fileio import room_for_cache

    folder = memdir_home() / "cache"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    if (folder / "jieba.cache").is_file():
        return folder if os.access(folder, os.R_OK) else None
    if not os.access(folder, os.W_OK) or not room_for_cache(folder, JIEBA_CACHE_BYTES):
        return None
    return folder


def has_cjk(text: str) -> bool:
    """True when ``text`` contains at least one CJK character."""
    return _CJK_RE.search(text) is not None


def estimate_tokens(text: str) -> int:
    """Estimate tokens: one per CJK character, one per 4 other characters (rounded up)."""
    cjk = len(_CJK_TOKEN_RE.findall(text))
    other = len(text) - cjk
    return cjk + math.ceil(other / 4)


def _words(text: str, *, search_mode: bool, segment_cjk: bool = True) -> list[str]:
    out: list[str] = []
    for match in _SEGMENT_RE.finditer(text):
        cjk, word = match.groups()
        if word:
            out.append(word.lower())
            continue
        assert cjk is not None
        if segment_cjk:
            out.extend(p for p in _cut(cjk, search_mode) if p.strip())
        else:
            out.append(cjk)
    return out


@lru_cache(maxsize=8192)
def _cut(run: str, search_mode: bool) -> tuple[str, ...]:
    jieba = _segmenter()
    if search_mode:
        return tuple(jieba.lcut_for_search(run, HMM=True))
    return tuple(jieba.lcut(run, HMM=True))


_stemmers = threading.local()


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Snowball English stem of a lower-case ASCII word of letters; other tokens unchanged.

    A stemmer object keeps state while it works, so each thread has its own (a server
    tokenises in its watcher thread while a search stems a query).
    """
    if not (word.isascii() and word.isalpha()) or len(word) < 3:
        return word
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        import snowballstemmer  # uses PyStemmer's compiled stemmers when installed

        stemmer = _stemmers.english = snowballstemmer.stemmer("english")
    return str(stemmer.stemWord(word))


def index_tokens(text: str, *, segment_cjk: bool = True) -> list[str]:
    """Tokens to store in the keyword index for ``text``: search-mode segmentation, lower-cased,
    stemmed, stopwords kept.

    With ``segment_cjk=False`` each CJK run stays one token (no jieba): enough to find terms
    without CJK characters, which never match inside a CJK run.
    """
    return [stem(token) for token in _words(text, search_mode=True, segment_cjk=segment_cjk)]


def index_text(text: str) -> str:
    """The space-joined :func:`index_tokens`, as stored in the FTS5 column.

    No token spans a line break, so the text is tokenised line by line with a cache: chunks
    overlap (each line is in ~2.5 chunks at the default 200/120) and a file's lines are then
    tokenised once, not once per chunk.
    """
    return " ".join(token for line in text.split("\n") for token in _line_tokens(line))


@lru_cache(maxsize=65536)
def _line_tokens(line: str) -> tuple[str, ...]:
    return tuple(index_tokens(line))


def plain_terms(query: str) -> list[str]:
    """Raw word runs of ``query`` (a CJK run stays one token), as OpenClaw builds FTS queries."""
    return list(dict.fromkeys(_WORD_RE.findall(query)))


#: Text stored in the FTS5 column, by ``index.keyword_tokenizer``.
KEYWORD_TOKENIZERS = {
    "memdir": lambda text: index_text(text),
    "plain": lambda text: text,
}


def query_terms(query: str) -> list[str]:
    """Distinct search terms of ``query`` in order: precise segmentation, stopwords dropped."""
    seen: dict[str, None] = {}
    for token in _words(query, search_mode=False):
        if token in STOPWORDS:
            continue
        seen.setdefault(stem(token), None)
    return list(seen)


def term_spans(text: str, terms: Iterable[str]) -> list[tuple[int, int]]:
    """Where the search ``terms`` (from :func:`query_terms`) occur in ``text``, as sorted,
    non-overlapping ``(start, end)`` character spans, to highlight a snippet.

    A Latin word matches when its stem is a term (``Migrations`` for ``migrat``); a CJK term
    matches wherever it occurs inside a CJK run (longer terms first).
    """
    wanted = {t.lower() for t in terms if t}
    cjk_terms = sorted((t for t in wanted if has_cjk(t)), key=len, reverse=True)
    spans: list[tuple[int, int]] = []
    for match in _SEGMENT_RE.finditer(text):
        word = match.group(2)
        if word:
            if stem(word.lower()) in wanted:
                spans.append(match.span())
            continue
        taken: list[tuple[int, int]] = []
        for term in cjk_terms:
            start = text.find(term, match.start(), match.end())
            while start >= 0:
                end = start + len(term)
                if all(end <= a or start >= b for a, b in taken):
                    taken.append((start, end))
                start = text.find(term, end, match.end())
        spans.extend(taken)
    return sorted(spans)


def similarity_tokens(text: str) -> frozenset[str]:
    """Token set for Jaccard similarity (MMR, dedup): words, plus CJK unigrams and bigrams."""
    out: set[str] = set()
    for match in _SEGMENT_RE.finditer(text):
        cjk, word = match.groups()
        if word:
            lowered = word.lower()
            if lowered not in ENGLISH_STOPWORDS:
                out.add(lowered)
        elif cjk:
            out.update(ch for ch in cjk if ch not in CHINESE_STOPWORDS)
            out.update(cjk[i : i + 2] for i in range(len(cjk) - 1))
    return frozenset(out)


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    """Jaccard similarity of two token collections (0 when both are empty)."""
    sa = a if isinstance(a, frozenset | set) else set(a)
    sb = b if isinstance(b, frozenset | set) else set(b)
    if not sa and not sb:
        return 0.0
    inter = len(sa & sb)
    return inter / (len(sa) + len(sb) - inter)
