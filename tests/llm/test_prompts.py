"""Loading prompts by name from memdir/lifecycle/prompts/ (importlib.resources)."""

from __future__ import annotations

import sys

import pytest

from memdir.errors import MemdirError
from memdir.llm import load_prompt
from memdir.llm import prompts as prompts_module


@pytest.fixture
def prompt_package(tmp_path, monkeypatch):
    """A throwaway importable package with lifecycle/prompts/, standing in for memdir's."""
    package = tmp_path / "prompt_pkg_for_tests"
    folder = package / "lifecycle" / "prompts"
    folder.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(prompts_module, "PROMPTS_PACKAGE", "prompt_pkg_for_tests")
    yield folder
    sys.modules.pop("prompt_pkg_for_tests", None)


def test_load_prompt_reads_the_file(prompt_package):
    (prompt_package / "compact.md").write_text(
        "Summarise under ## Decisions.\n保留所有标识符。\n", encoding="utf-8"
    )

    assert load_prompt("compact") == "Summarise under ## Decisions.\n保留所有标识符。\n"


def test_missing_prompt_is_a_clear_error(prompt_package):
    with pytest.raises(MemdirError, match=r"prompt 'flush' not found.*lifecycle/prompts/flush\.md"):
        load_prompt("flush")


@pytest.mark.parametrize("name", ["../secrets", "a/b", "", "Compact", "x.md"])
def test_only_plain_names_are_accepted(prompt_package, name):
    with pytest.raises(MemdirError, match="not valid"):
        load_prompt(name)


def test_missing_in_the_real_package_names_the_path():
    # memdir's own prompts arrive with lifecycle/; whatever is shipped, a bogus name is missing.
    with pytest.raises(MemdirError, match=r"memdir/lifecycle/prompts/no-such-prompt\.md"):
        load_prompt("no-such-prompt")
