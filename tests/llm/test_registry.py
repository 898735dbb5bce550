"""Choosing an LLM by name, and the [llm] config section."""

from __future__ import annotations

import dataclasses
import sys

import pytest

from memdir.config.settings import Config, LLMConfig, load_config
from memdir.errors import ConfigError, ProviderUnavailable
from memdir.llm import LLM, ScriptedLLM, create_llm, llm_names, register_llm
from memdir.llm.openai import OpenAIChatLLM
from memdir.llm.registry import chat_llm_choice
from tests.helpers import write

KEY = "sk-test-SECRET-1234567890"


# --- registry ------------------------------------------------------------------------------


def test_builtin_names():
    assert {"anthropic", "fake", "none", "openai"} <= set(llm_names())


def test_none_means_no_llm():
    assert create_llm(LLMConfig()) is None


def test_fake_is_a_scripted_llm():
    llm = create_llm(LLMConfig(provider="fake", model="tiny"))
    assert isinstance(llm, ScriptedLLM)
    assert llm.model == "tiny"


def test_openai_from_config(monkeypatch):
    monkeypatch.setenv("MY_LLM_KEY", KEY)
    config = LLMConfig(
        provider="openai",
        model="qwen-plus",
        base_url="https://dashscope.aliyuncs.com/compatible-mode/v1",
        api_key="env:MY_LLM_KEY",
        timeout=12.5,
        max_retries=2,
        max_output_tokens=777,
    )

    llm = create_llm(config)

    assert isinstance(llm, OpenAIChatLLM)
    assert isinstance(llm, LLM)
    assert llm.model == "qwen-plus"
    assert llm.base_url == "https://dashscope.aliyuncs.com/compatible-mode/v1"
    assert (llm.timeout, llm.max_retries, llm.max_output_tokens) == (12.5, 2, 777)


def test_openai_with_an_unset_key_variable_is_unavailable():
    config = LLMConfig(provider="openai", model="m", api_key="env:NOT_SET_ANYWHERE")

    with pytest.raises(ProviderUnavailable, match="NOT_SET_ANYWHERE"):
        create_llm(config)


def test_a_literal_key_is_refused():
    with pytest.raises(ConfigError, match="env:VAR") as info:
        create_llm(LLMConfig(provider="openai", model="m", api_key=KEY))
    assert KEY not in str(info.value)


def test_anthropic_from_config(monkeypatch):
    pytest.importorskip("anthropic")
    monkeypatch.setenv("MY_ANTHROPIC_KEY", KEY)

    llm = create_llm(
        LLMConfig(provider="anthropic", model="claude-x", api_key="env:MY_ANTHROPIC_KEY")
    )

    assert llm is not None
    assert (llm.name, llm.model) == ("anthropic", "claude-x")


def test_anthropic_without_the_sdk_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "anthropic", None)  # as if not installed

    with pytest.raises(ProviderUnavailable, match=r"pip install 'anthropic>=0.40'"):
        create_llm(LLMConfig(provider="anthropic"))


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(ConfigError) as info:
        create_llm(LLMConfig(provider="gpt"))
    message = str(info.value)
    assert "'gpt'" in message
    for name in ("anthropic", "fake", "none", "openai"):
        assert name in message


def test_register_a_new_provider():
    register_llm("echo-test", lambda cfg: ScriptedLLM(default=f"model {cfg.model}"))

    llm = create_llm(LLMConfig(provider="echo-test", model="e1"))

    assert llm is not None
    assert llm.complete([]) == "model e1"
    assert "echo-test" in llm_names()


# --- config --------------------------------------------------------------------------------


def test_llm_config_defaults():
    config = Config().llm
    assert config == LLMConfig()
    assert dataclasses.asdict(config) == {
        "provider": "none",
        "model": "",
        "base_url": "",
        "api_key": "",
        "timeout": 60.0,
        "max_retries": 3,
        "context_window": 128000,
        "max_output_tokens": 4096,
    }


@pytest.mark.parametrize(
    "values",
    [{"timeout": 0}, {"max_retries": 0}, {"context_window": 4096}, {"max_output_tokens": 0}],
)
def test_llm_config_checks_its_values(values):
    with pytest.raises(ConfigError, match="llm"):
        LLMConfig(**values)


def test_user_file_sets_the_llm(isolated_env, workspace):
    write(
        isolated_env,
        "config.toml",
        '[llm]\nprovider = "openai"\nmodel = "deepseek-chat"\n'
        'base_url = "https://api.deepseek.com/v1"\napi_key = "env:DEEPSEEK_API_KEY"\n'
        "timeout = 30\ncontext_window = 64000\n",
    )

    config = load_config(workspace).llm

    assert config.provider == "openai"
    assert config.base_url == "https://api.deepseek.com/v1"
    assert config.api_key == "env:DEEPSEEK_API_KEY"
    assert config.timeout == 30.0
    assert config.context_window == 64000


@pytest.mark.parametrize("key", ["base_url", "api_key"])
def test_workspace_may_not_set_llm_endpoints_or_keys(workspace, key):
    path = write(workspace, ".memdir/config.toml", f'[llm]\n{key} = "env:SOMETHING"\n')

    with pytest.raises(ConfigError, match=f"llm.{key}") as info:
        load_config(workspace)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("provider", ["openai", "anthropic", "something-else"])
def test_workspace_may_not_choose_a_remote_llm(workspace, provider):
    write(workspace, ".memdir/config.toml", f'[llm]\nprovider = "{provider}"\n')

    with pytest.raises(ConfigError, match=r"llm\.provider") as info:
        load_config(workspace)
    assert provider in str(info.value)


@pytest.mark.parametrize("provider", ["none", "fake"])
def test_workspace_may_choose_a_local_llm_and_its_budgets(workspace, provider):
    write(
        workspace,
        ".memdir/config.toml",
        f'[llm]\nprovider = "{provider}"\nmodel = "tiny"\nmax_output_tokens = 1000\n',
    )

    config = load_config(workspace).llm

    assert (config.provider, config.model, config.max_output_tokens) == (provider, "tiny", 1000)


def test_workspace_may_pick_the_model_of_the_users_provider(isolated_env, workspace):
    write(isolated_env, "config.toml", '[llm]\nprovider = "openai"\n')
    write(workspace, ".memdir/config.toml", '[llm]\nmodel = "gpt-4o"\n')

    config = load_config(workspace).llm

    assert (config.provider, config.model) == ("openai", "gpt-4o")


# --- the chat model's provider and where it came from ----------------------------------------


def test_chat_choice_from_the_config_names_the_file(isolated_env, monkeypatch):
    path = write(isolated_env, "config.toml", '[llm]\nprovider = "fake"\nmodel = "m1"\n')
    monkeypatch.setenv("MEMDIR_LLM_BASE_URL", "http://127.0.0.1:9/v1")  # ignored: configured

    choice = chat_llm_choice(load_config())

    assert choice.to_dict() == {
        "provider": "fake",
        "model": "m1",
        "source": f"llm.provider in {path}",
    }


def test_chat_choice_switched_by_the_environment_says_so(isolated_env, monkeypatch):
    monkeypatch.setenv("MEMDIR_LLM_API_KEY", KEY)
    monkeypatch.setenv("MEMDIR_LLM_MODEL", "env-model")

    choice = chat_llm_choice(load_config())

    assert choice.settings.provider == "openai"
    assert choice.settings.model == "env-model"
    assert choice.source == (
        "environment: MEMDIR_LLM_API_KEY set while llm.provider is 'none' (default)"
    )
    assert KEY not in str(choice.to_dict())


def test_chat_choice_without_anything_is_none(isolated_env):
    assert chat_llm_choice(load_config()).to_dict() == {
        "provider": "none",
        "model": "",
        "source": "default",
    }
