"""Configuration layering, validation and secrets; the MEMDIR_NOW clock."""

from __future__ import annotations

import dataclasses
import os
from datetime import datetime
from pathlib import Path

import pytest

from memdir import clock
from memdir.config.settings import (
    MAX_CONFIG_BYTES,
    ChunkingConfig,
    Config,
    SearchConfig,
    _read_toml,
    default_workspace,
    load_config,
    memdir_home,
    resolve_secret,
)
from memdir.errors import ConfigError
from tests.helpers import write


def user_config(home, text):
    return write(home, "config.toml", text)


def workspace_config(workspace, text):
    return write(workspace, ".memdir/config.toml", text)


# --- defaults ------------------------------------------------------------------------------


def test_defaults_match_the_spec():
    config = load_config()

    search = config.search
    assert search.max_results == 6
    assert search.raw_min_score == 0.35  # OpenClaw's threshold, for uncalibrated scores
    assert search.vector_weight == 0.7
    assert search.text_weight == 0.3
    assert search.candidate_multiplier == 4
    assert search.max_candidates == 200
    assert search.snippet_chars == 750  # tuned: docs/design.md#search (OpenClaw 700)
    assert search.score_both_legs is True  # tuned (OpenClaw: a missing leg scores 0)
    assert search.mmr is True
    assert search.mmr_lambda == 0.7
    assert search.decay is False  # tuned on LoCoMo dev: see docs/benchmarks.md
    assert search.half_life_days == 30
    assert config.chunking.tokens == 200  # tuned: docs/design.md#chunking (OpenClaw 400/80)
    assert config.chunking.overlap == 120
    assert config.chunking.pooling == "chunk"
    assert config.embedding.provider == "local"
    assert config.embedding.api_key == ""
    assert config.index.extra_paths == ()
    assert config == Config()


def test_home_and_default_workspace_follow_the_environment(isolated_env, monkeypatch, tmp_path):
    assert memdir_home() == isolated_env
    assert default_workspace() == isolated_env / "workspace"

    monkeypatch.setenv("MEMDIR_WORKSPACE", str(tmp_path / "elsewhere"))
    assert default_workspace() == tmp_path / "elsewhere"


# --- layering ------------------------------------------------------------------------------


def test_user_then_workspace_then_overrides(isolated_env, workspace):
    user_config(
        isolated_env,
        "[search]\nmax_results = 8\nmin_score = 0.5\nsnippet_chars = 500\n"
        '[embedding]\nprovider = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n',
    )
    workspace_config(workspace, "[search]\nmax_results = 10\nmin_score = 0.4\n")

    user_only = load_config()
    layered = load_config(workspace)
    overridden = load_config(workspace, overrides={"search": {"max_results": 12}})

    assert (user_only.search.max_results, user_only.search.min_score) == (8, 0.5)
    assert (layered.search.max_results, layered.search.min_score) == (10, 0.4)
    assert (overridden.search.max_results, overridden.search.min_score) == (12, 0.4)
    # Keys a later layer does not name keep the earlier value.
    assert overridden.search.snippet_chars == 500
    assert overridden.embedding.provider == "openai"
    assert overridden.embedding.base_url == "http://127.0.0.1:9/v1"
    assert overridden.search.vector_weight == 0.7


def test_workspace_file_without_user_file(workspace):
    workspace_config(
        workspace, '[chunking]\ntokens = 256\noverlap = 32\n[index]\nextra_paths = ["docs"]\n'
    )

    config = load_config(workspace)

    assert config.chunking == ChunkingConfig(tokens=256, overlap=32)
    assert config.index.extra_paths == ("docs",)


def test_with_overrides_returns_a_copy():
    base = Config()

    changed = base.with_overrides({"search": {"mmr": False, "half_life_days": 7}})

    assert changed.search.mmr is False
    assert changed.search.half_life_days == 7.0
    assert isinstance(changed.search.half_life_days, float)
    assert base.search == SearchConfig()


def test_integer_is_accepted_for_a_float():
    config = Config().with_overrides({"search": {"min_score": 1}})

    assert config.search.min_score == 1.0
    assert isinstance(config.search.min_score, float)


# --- validation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[serch]\nmax_results = 8\n", "unknown config section [serch]"),
        ("[search]\nmax_result = 8\n", "unknown key 'max_result'"),
        ('[search]\nmax_results = "eight"\n', "expected int"),
        ("[search]\nmax_results = 6.5\n", "expected int"),
        ("[search]\nmax_results = true\n", "expected int"),
        ('[search]\nmin_score = "high"\n', "expected float"),
        ("[search]\nmin_score = false\n", "expected float"),
        ('[search]\nmmr = "yes"\n', "expected bool"),
        ("[search]\nmmr = 1\n", "expected bool"),
        ("[embedding]\nprovider = 3\n", "expected str"),
        ('[index]\nextra_paths = "docs"\n', "expected tuple"),
        ("[index]\nextra_paths = [1, 2]\n", "expected tuple"),
        ("search = 5\n", "must be a table"),
        ("max_results = 8\n", "unknown config section"),
        ("[search\nmax_results = 8\n", "not valid TOML"),
        ("[search]\nmax_results = \n", "not valid TOML"),
    ],
)
def test_bad_user_file_names_the_file(isolated_env, text, message):
    path = user_config(isolated_env, text)

    with pytest.raises(ConfigError) as info:
        load_config()

    assert str(path) in str(info.value)
    assert message in str(info.value)


def test_user_file_that_is_not_utf8(isolated_env):
    path = isolated_env / "config.toml"
    path.write_bytes(b'[embedding]\nmodel = "\xff\xfe"\n')

    with pytest.raises(ConfigError, match="not valid TOML") as info:
        load_config()
    assert str(path) in str(info.value)


@pytest.mark.parametrize(
    "text",
    [
        "[search]\nmax_results = 'six'\n",
        "[nope]\n",
        "[search]\nunknown = 1\n",
        "not toml at all ===\n",
    ],
)
def test_bad_workspace_file_names_the_file(workspace, text):
    path = workspace_config(workspace, text)

    with pytest.raises(ConfigError) as info:
        load_config(workspace)
    assert str(path) in str(info.value)


def test_bad_overrides_are_config_errors():
    with pytest.raises(ConfigError, match="arguments"):
        Config().with_overrides({"search": {"max_results": "many"}})
    with pytest.raises(ConfigError, match="unknown config section"):
        load_config(overrides={"bogus": {"x": 1}})


@pytest.mark.parametrize("key", ["base_url", "api_key"])
def test_workspace_may_not_redirect_endpoints_or_keys(workspace, key):
    path = workspace_config(workspace, f'[embedding]\n{key} = "env:SOMETHING"\n')

    with pytest.raises(ConfigError, match=f"embedding.{key}") as info:
        load_config(workspace)
    assert str(path) in str(info.value)


def test_user_file_may_set_endpoints_and_keys(isolated_env, workspace):
    user_config(
        isolated_env, '[embedding]\nbase_url = "http://127.0.0.1:1/v1"\napi_key = "env:K"\n'
    )

    config = load_config(workspace)

    assert config.embedding.base_url == "http://127.0.0.1:1/v1"
    assert config.embedding.api_key == "env:K"


def test_workspace_embedding_that_is_not_a_table(workspace):
    path = workspace_config(workspace, "embedding = 5\n")

    with pytest.raises(ConfigError) as info:
        load_config(workspace)
    assert str(path) in str(info.value)


# --- secrets -------------------------------------------------------------------------------


def test_resolve_secret_reads_the_variable(monkeypatch):
    monkeypatch.setenv("MEMDIR_TEST_KEY", "sk-from-env")

    assert resolve_secret("env:MEMDIR_TEST_KEY", what="embedding.api_key") == "sk-from-env"


def test_resolve_secret_empty_means_no_secret():
    assert resolve_secret("", what="embedding.api_key") == ""


def test_resolve_secret_refuses_a_literal():
    with pytest.raises(ConfigError, match="env:VAR") as info:
        resolve_secret("sk-literal-SECRET", what="embedding.api_key")
    assert "embedding.api_key" in str(info.value)
    # The message must not echo the secret back.
    assert "sk-literal-SECRET" not in str(info.value)


def test_resolve_secret_unset_variable_is_named(monkeypatch):
    monkeypatch.delenv("MEMDIR_TEST_MISSING", raising=False)

    with pytest.raises(ConfigError, match="MEMDIR_TEST_MISSING"):
        resolve_secret("env:MEMDIR_TEST_MISSING", what="embedding.api_key")


def test_resolve_secret_empty_variable_is_unset(monkeypatch):
    monkeypatch.setenv("MEMDIR_TEST_EMPTY", "")

    with pytest.raises(ConfigError, match="MEMDIR_TEST_EMPTY"):
        resolve_secret("env:MEMDIR_TEST_EMPTY", what="embedding.api_key")


# --- frozen --------------------------------------------------------------------------------


def test_config_is_frozen():
    config = Config()

    with pytest.raises(dataclasses.FrozenInstanceError):
        config.search = SearchConfig(max_results=1)  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.search.max_results = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.embedding.api_key = "sk-x"  # type: ignore[misc]


def test_config_is_hashable_and_comparable():
    assert hash(Config()) == hash(Config())
    assert Config().with_overrides({"chunking": {"tokens": 300}}) != Config()


# --- clock ---------------------------------------------------------------------------------


def test_now_without_override_is_the_real_time():
    before = datetime.now()
    value = clock.now()
    after = datetime.now()

    assert before <= value <= after
    assert value.tzinfo is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-03-01", datetime(2026, 3, 1, 0, 0)),
        ("2026-03-01T09:30", datetime(2026, 3, 1, 9, 30)),
        ("2026-03-01T09:30:15", datetime(2026, 3, 1, 9, 30, 15)),
        ("2026-03-01 23:59:59", datetime(2026, 3, 1, 23, 59, 59)),
        ("  2026-03-01T09:30  ", datetime(2026, 3, 1, 9, 30)),
    ],
)
def test_now_honours_memdir_now(monkeypatch, value, expected):
    monkeypatch.setenv("MEMDIR_NOW", value)

    assert clock.now() == expected


def test_now_with_a_time_zone_becomes_local_naive(monkeypatch):
    monkeypatch.setenv("MEMDIR_NOW", "2026-03-01T09:30:00+00:00")

    value = clock.now()

    assert value.tzinfo is None
    assert value == datetime.fromisoformat("2026-03-01T09:30:00+00:00").astimezone().replace(
        tzinfo=None
    )


@pytest.mark.parametrize("value", ["yesterday", "2026-13-01", "2026/03/01", "03-01-2026", "now"])
def test_now_rejects_garbage(monkeypatch, value):
    monkeypatch.setenv("MEMDIR_NOW", value)

    with pytest.raises(ConfigError, match="MEMDIR_NOW"):
        clock.now()


@pytest.mark.parametrize("entry", ["/etc", "~/notes", "../other", "sub/../../x"])
def test_workspace_config_may_not_add_extra_paths_outside(tmp_path, entry):
    ws = tmp_path / "ws"
    (ws / ".memdir").mkdir(parents=True)
    (ws / ".memdir" / "config.toml").write_text(
        f"[index]\nextra_paths = [{entry!r}]\n".replace("'", '"'), encoding="utf-8"
    )
    with pytest.raises(ConfigError, match="extra_paths"):
        load_config(ws)


def test_workspace_config_may_add_extra_paths_inside(tmp_path):
    ws = tmp_path / "ws"
    (ws / ".memdir").mkdir(parents=True)
    (ws / ".memdir" / "config.toml").write_text('[index]\nextra_paths = ["docs"]\n')
    assert load_config(ws).index.extra_paths == ("docs",)


@pytest.mark.parametrize("provider", ["openai", "ollama", "gemini"])
def test_workspace_may_not_choose_a_remote_embedder(isolated_env, workspace, provider):
    path = workspace_config(workspace, f'[embedding]\nprovider = "{provider}"\n')

    with pytest.raises(ConfigError, match=r"embedding\.provider fake, local, none") as info:
        load_config(workspace)
    assert str(path) in str(info.value) and repr(provider) in str(info.value)


@pytest.mark.parametrize("provider", ["local", "none", "fake"])
def test_workspace_may_choose_a_local_embedder(workspace, provider):
    workspace_config(workspace, f'[embedding]\nprovider = "{provider}"\n')

    assert load_config(workspace).embedding.provider == provider


def test_a_linked_config_is_read_and_a_huge_or_special_one_is_not(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "memdir.toml"
    real.parent.mkdir()
    real.write_text("[search]\nmax_results = 9\n", encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").symlink_to(real)
    assert _read_toml(home / "config.toml") == {"search": {"max_results": 9}}
    real.write_text("# " + "x" * (MAX_CONFIG_BYTES + 10) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="larger than"):
        _read_toml(home / "config.toml")
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    assert _read_toml(fifo) == {}  # never opened: a FIFO would block the read


def test_chunking_pack_tokens_is_checked() -> None:
    from memdir.config.settings import ChunkingConfig

    assert ChunkingConfig().pack_tokens == -1  # automatic: decided by the embedder
    assert ChunkingConfig(pack_tokens=0).pack_tokens == 0
    with pytest.raises(ConfigError, match="pack_tokens"):
        ChunkingConfig(pack_tokens=-2)
