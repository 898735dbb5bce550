"""Tokenising (memdir.text): Latin words, Chinese segmentation, stopwords, token estimates."""

from __future__ import annotations

import os
import re
import string
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memdir.text import (
    STOPWORDS,
    estimate_tokens,
    has_cjk,
    index_text,
    index_tokens,
    jaccard,
    query_terms,
    similarity_tokens,
    stem,
)

# A small pool of Chinese characters that jieba knows as words and as parts of words.
CJK_POOL = "缓存迁移端口分布式锁数据库配置的了吗我们使用新到和"


# --- Latin words ---------------------------------------------------------------------------


def test_latin_words_are_lower_cased_and_stemmed():
    assert index_tokens("Redis PORT 6379 Hello") == ["redi", "port", "6379", "hello"]
    assert query_terms("Redis PORT") == ["redi", "port"]
    # The same stem at index and query time: plural and verb forms meet.
    assert query_terms("migrations") == query_terms("migration") == index_tokens("migrated")
    assert stem("v2") == "v2" and stem("6379") == "6379" and stem("café") == "café"


def test_punctuation_separates_words():
    assert index_tokens("alpha, beta; (gamma)!") == ["alpha", "beta", "gamma"]


def test_dotted_word_is_split_into_parts_like_fts5():
    tokens = index_tokens("upgrade to v1.2 and node.js now")

    assert {"v1", "2", "node", "js"} <= set(tokens)
    assert not any("." in t for t in tokens)
    assert query_terms("node.js") == ["node", "js"]


def test_index_text_is_space_joined_tokens():
    assert index_text("Redis 缓存") == " ".join(index_tokens("Redis 缓存"))


# --- Chinese -------------------------------------------------------------------------------


@pytest.mark.parametrize("word", ["缓存", "迁移", "端口"])
def test_index_tokens_contain_two_character_words(word):
    tokens = index_tokens("Redis 缓存迁移到新端口 6379")

    assert word in tokens


def test_index_tokens_use_search_mode_sub_words():
    tokens = index_tokens("我们使用分布式锁")

    assert "分布式" in tokens
    assert "分布" in tokens


def test_short_word_inside_a_long_one_is_indexed():
    # docs/design.md#keyword-search: a word inside a longer one (库 in 数据库) must be findable.
    assert "数据" in index_tokens("数据库迁移")


def test_query_terms_mix_latin_and_chinese():
    terms = query_terms("Redis 分布式锁")

    assert "redi" in terms
    assert "分布式" in terms or {"分布", "布式"} <= set(terms)
    assert all(term.strip() for term in terms)


def test_query_terms_are_distinct_and_in_order():
    assert query_terms("redis cache Redis CACHE port") == ["redi", "cach", "port"]


def test_has_cjk():
    assert has_cjk("port 端口")
    assert not has_cjk("port 6379")
    assert not has_cjk("")


# --- stopwords -----------------------------------------------------------------------------


def test_english_stopwords_dropped_from_queries_only():
    text = "the cache of redis"

    assert query_terms(text) == ["cach", "redi"]
    assert {"the", "of"} <= set(index_tokens(text))


@pytest.mark.parametrize("stopword", ["的", "了", "吗"])
def test_chinese_stopwords_dropped_from_queries_only(stopword):
    text = "端口的配置改了吗"

    assert stopword not in query_terms(text)
    assert stopword in index_tokens(text)
    assert {"端口", "配置"} <= set(query_terms(text))


@pytest.mark.parametrize("query", ["the of", "The OF a", "的 了 吗", "the 的 of 了", "", "   "])
def test_query_of_only_stopwords_is_empty(query):
    assert query_terms(query) == []


# --- estimate_tokens -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 1),
        ("abcd", 1),
        ("abcde", 2),
        ("abcdefgh", 2),
        ("中", 1),
        ("缓存迁移", 4),
        ("中文abcd", 3),
        ("中文abcde", 4),
        ("端口 6379", 2 + 2),  # two CJK + " 6379" (5 chars → 2)
    ],
)
def test_estimate_tokens(text, expected):
    assert estimate_tokens(text) == expected


def test_estimate_tokens_counts_four_ascii_chars_per_token():
    assert estimate_tokens("x" * 4000) == 1000
    assert estimate_tokens("中" * 1000) == 1000


# --- similarity tokens and Jaccard ---------------------------------------------------------


def test_similarity_tokens_have_cjk_unigrams_and_bigrams():
    tokens = similarity_tokens("分布式锁 Redis")

    assert {"分", "布", "式", "锁"} <= tokens
    assert {"分布", "布式", "式锁"} <= tokens
    assert "redis" in tokens


def test_similarity_tokens_drop_stopwords_from_words_and_unigrams():
    tokens = similarity_tokens("the cache 的")

    assert "the" not in tokens
    assert "的" not in tokens
    assert "cache" in tokens


def test_jaccard_basics():
    assert jaccard({"a", "b"}, {"a", "b"}) == 1.0
    assert jaccard({"a"}, {"b"}) == 0.0
    assert jaccard(set(), set()) == 0.0
    assert jaccard(["a", "b"], ["b", "c"]) == pytest.approx(1 / 3)
    assert jaccard({"a"}, set()) == 0.0


def test_jaccard_of_similarity_tokens_ranks_near_texts_higher():
    base = similarity_tokens("Redis 分布式锁的超时")
    near = similarity_tokens("Redis 分布式锁")
    far = similarity_tokens("周末去爬山")

    assert jaccard(base, near) > jaccard(base, far)


# --- properties ----------------------------------------------------------------------------


def _well_formed(tokens) -> bool:
    return all(isinstance(t, str) and t and not any(c.isspace() for c in t) for t in tokens)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_tokenisers_never_raise_and_return_clean_tokens(text):
    assert _well_formed(index_tokens(text))
    assert _well_formed(query_terms(text))
    assert _well_formed(similarity_tokens(text))
    assert estimate_tokens(text) >= 0


latin_text = st.text(alphabet=string.ascii_letters + string.digits + " ", max_size=80)


@settings(max_examples=200, deadline=None)
@given(latin_text)
def test_latin_query_terms_are_found_in_index_tokens(text):
    # The query terms are the stems of the words that are not stopwords, and each is indexed.
    # A stopword is dropped as typed: a content word whose stem happens to be a stopword
    # ("ifs" -> "if", "wills" -> "will") stays a term.
    words = re.findall(r"[a-z0-9]+", text.lower())
    indexed = set(index_tokens(text))
    terms = query_terms(text)

    assert set(terms) == {stem(w) for w in words if w not in STOPWORDS}
    assert set(terms) <= indexed


def test_a_stopword_is_dropped_as_typed_not_by_its_stem():
    assert query_terms("if it was") == []
    assert query_terms("IFS and buts") == ["if", "but"]
    assert query_terms("wills") == ["will"]


mixed_text = st.text(alphabet=string.ascii_letters + string.digits + " .," + CJK_POOL, max_size=60)


@settings(max_examples=150, deadline=None)
@given(mixed_text)
def test_mixed_query_terms_are_found_in_index_tokens(text):
    # Precise-mode words are a subset of search-mode words, so a text always matches itself.
    indexed = set(index_tokens(text))

    assert set(query_terms(text)) <= indexed


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=string.ascii_letters + string.digits + " .,\n\r" + CJK_POOL, max_size=80))
def test_index_text_line_by_line_equals_the_whole_text_tokenised(text):
    assert index_text(text) == " ".join(index_tokens(text))


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=string.ascii_letters + CJK_POOL + " ", max_size=40))
def test_estimate_tokens_is_subadditive(text):
    # Chunking relies on this: cutting a line never makes the pieces cheaper than the whole.
    for cut in range(len(text) + 1):
        left, right = text[:cut], text[cut:]
        assert estimate_tokens(text) <= estimate_tokens(left) + estimate_tokens(right)


# --- loading jieba -------------------------------------------------------------------------


def _fresh_python(code: str, home: Path) -> str:
    env = {**os.environ, "MEMDIR_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    return done.stdout.strip()


def test_an_english_query_and_its_snippets_never_load_jieba(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from memdir.text import query_terms, index_tokens\n"
        "terms = query_terms('which port does redis use')\n"
        "tokens = index_tokens('Redis 端口 6380', segment_cjk=False)\n"
        "print(terms, tokens, 'jieba' in sys.modules)\n"
    )
    out = _fresh_python(code, tmp_path)
    assert out == "['port', 'redi', 'use'] ['redi', '端口', '6380'] False"


def test_jieba_keeps_its_dictionary_cache_under_memdir_home(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from memdir.text import query_terms\n"
        "print(query_terms('分布式锁的端口'), 'pkg_resources' in sys.modules)\n"
    )
    assert _fresh_python(code, tmp_path) == "['分布式', '锁', '端口'] False"
    cache = tmp_path / "cache" / "jieba.cache"
    assert cache.is_file() and cache.stat().st_size > 1_000_000
    built = cache.stat().st_mtime_ns
    _fresh_python(code, tmp_path)  # the second start loads the cache instead of rebuilding it
    assert cache.stat().st_mtime_ns == built


def test_a_nearly_full_disk_gets_no_jieba_cache_and_no_partial_file(tmp_path: Path) -> None:
    """A full-disk torture run: jieba's ~9 MB cache filled a 4 MB disk, its failed write left a
    partial temporary file there, and `memdir index` then failed with "disk is full"."""
    code = (
        "import shutil\n"
        "from memdir.workspace import fileio\n"
        "real = shutil.disk_usage\n"
        "fileio.shutil.disk_usage = lambda p: real(p)._replace(free=4 * 1024 * 1024)\n"
        "from memdir.text import query_terms\n"
        "print(query_terms('分布式锁的端口'))\n"
    )
    assert _fresh_python(code, tmp_path) == "['分布式', '锁', '端口']"
    assert list((tmp_path / "cache").iterdir()) == []


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=string.ascii_lowercase, min_size=3, max_size=14))
def test_stems_are_snowballs_english_whichever_implementation_runs(word: str) -> None:
    """PyStemmer (compiled) and snowballstemmer's pure-Python English stemmer agree, so an
    index built with either matches queries stemmed by the other."""
    from snowballstemmer.english_stemmer import EnglishStemmer

    assert stem(word) == EnglishStemmer().stemWord(word)


def test_threads_stem_with_their_own_stemmer() -> None:
    words = [f"{w}ing" for w in ("walk", "talk", "migrat", "deploy", "index")] * 200
    expected = [stem(w) for w in words]
    results: list[list[str]] = []

    def work() -> None:
        results.append([stem.__wrapped__(w) for w in words])

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [expected] * 4
