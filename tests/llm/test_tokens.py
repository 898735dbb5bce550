"""Token counting: tiktoken only when installed and cached, else the CJK-aware estimate."""

from __future__ import annotations

import hashlib
import sys
import types

import pytest

from memdir.llm import Message, count_message_tokens, count_tokens
from memdir.llm.base import MESSAGE_OVERHEAD, REPLY_OVERHEAD, tiktoken_cache_dirs
from memdir.text import estimate_tokens

URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"


class WordEncoding:
    """Stands in for a tiktoken encoding: one token per whitespace-separated word."""

    def __init__(self, name: str) -> None:
        self.name = name

    def encode(self, text: str, disallowed_special=("all",)) -> list[int]:
        assert disallowed_special == ()  # text with "<|endoftext|>" must not raise
        return list(range(len(text.split())))


def fake_tiktoken(models: dict[str, str] | None = None) -> types.ModuleType:
    """A stand-in tiktoken module that records which encodings were loaded."""
    module = types.ModuleType("tiktoken")
    module.loaded = []  # type: ignore[attr-defined]

    def get_encoding(name: str) -> WordEncoding:
        module.loaded.append(name)  # type: ignore[attr-defined]
        return WordEncoding(name)

    def encoding_name_for_model(model: str) -> str:
        return (models or {})[model]  # KeyError for unknown models, like tiktoken

    module.get_encoding = get_encoding  # type: ignore[attr-defined]
    module.encoding_name_for_model = encoding_name_for_model  # type: ignore[attr-defined]
    return module


def cache_file(folder, name: str):
    path = folder / hashlib.sha1(URL.format(name=name).encode()).hexdigest()
    path.write_bytes(b"dG9rZW4= 0\n")
    return path


@pytest.fixture
def no_tiktoken(monkeypatch):
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # `import tiktoken` fails


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    folder = tmp_path / "tiktoken-cache"
    folder.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(folder))
    return folder


# --- the estimate --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("hello world", 3),  # 11 chars / 4, rounded up
        ("数据库连接池", 6),  # one token per CJK character
        ("Redis 端口 6380", 2 + 3),  # 2 CJK + 11 other chars / 4 rounded up
    ],
)
def test_estimate_without_tiktoken(no_tiktoken, text, expected):
    assert count_tokens(text) == expected
    assert count_tokens(text, "gpt-4o") == estimate_tokens(text)


def test_chinese_counts_more_tokens_per_character_than_english(no_tiktoken):
    english = "the database connection pool"
    chinese = "数据库连接池的大小"
    assert count_tokens(chinese) / len(chinese) > count_tokens(english) / len(english)


def test_tiktoken_without_a_cached_encoding_is_never_asked(cache_dir, monkeypatch):
    module = fake_tiktoken({"gpt-4o": "o200k_base"})
    monkeypatch.setitem(sys.modules, "tiktoken", module)

    assert count_tokens("hello brave new world") == estimate_tokens("hello brave new world")
    assert count_tokens("hello brave new world", "gpt-4o") == 6
    assert module.loaded == []  # loading would download the encoding


def test_caching_switched_off_means_estimate(monkeypatch, tmp_path):
    module = fake_tiktoken()
    monkeypatch.setitem(sys.modules, "tiktoken", module)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken would download every time

    assert tiktoken_cache_dirs(module) == []
    assert count_tokens("one two three four five six") == 7
    assert module.loaded == []


# --- tiktoken, when its encoding is cached -------------------------------------------------


def test_cached_default_encoding_is_used(cache_dir, monkeypatch):
    module = fake_tiktoken()
    monkeypatch.setitem(sys.modules, "tiktoken", module)
    cache_file(cache_dir, "cl100k_base")  # o200k_base missing: the next one is tried

    assert count_tokens("one two three four five six") == 6
    assert count_tokens("seven eight <|endoftext|>") == 3
    assert module.loaded == ["cl100k_base"]  # loaded once, then reused


def test_model_picks_its_encoding(cache_dir, monkeypatch):
    module = fake_tiktoken({"gpt-4o": "o200k_base", "gpt-4": "cl100k_base"})
    monkeypatch.setitem(sys.modules, "tiktoken", module)
    cache_file(cache_dir, "o200k_base")

    assert count_tokens("a b c", "gpt-4o") == 3
    assert count_tokens("a b c", "gpt-4") == estimate_tokens("a b c")  # cl100k not cached
    assert count_tokens("a b c", "claude-haiku-4-5") == estimate_tokens("a b c")  # unknown
    assert module.loaded == ["o200k_base"]


def test_data_gym_cache_dir_is_honoured(tmp_path, monkeypatch):
    module = fake_tiktoken()
    monkeypatch.setitem(sys.modules, "tiktoken", module)
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", str(tmp_path))
    cache_file(tmp_path, "o200k_base")

    assert tiktoken_cache_dirs(module) == [tmp_path]
    assert count_tokens("a b") == 2


def test_a_failing_tiktoken_falls_back_to_the_estimate(cache_dir, monkeypatch):
    module = fake_tiktoken()

    def broken(name: str) -> None:
        raise ValueError("hash mismatch")

    module.get_encoding = broken  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tiktoken", module)
    cache_file(cache_dir, "o200k_base")

    assert count_tokens("hello world") == 3


# --- messages ------------------------------------------------------------------------------


def test_message_tokens_add_a_small_overhead(no_tiktoken):
    messages = [Message("user", "hello world"), Message("assistant", "数据库")]

    assert count_message_tokens(messages) == REPLY_OVERHEAD + 2 * MESSAGE_OVERHEAD + 3 + 3
    assert count_message_tokens(messages, system="be brief") == (
        count_message_tokens(messages) + MESSAGE_OVERHEAD + 2
    )
    assert count_message_tokens([]) == REPLY_OVERHEAD
