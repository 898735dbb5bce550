"""The configuration blocks in README.md are valid TOML and state the real defaults."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path

import pytest

from memdir.config.settings import Config

README = Path(__file__).resolve().parents[1] / "README.md"
#: Keys the README sets to an example on purpose (not the default).
EXAMPLES = {("index", "extra_paths")}


def _toml_blocks() -> list[str]:
    blocks = re.findall(r"```toml\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    return [b for b in blocks if re.search(r"^\[[a-z]+\]", b, re.M)]


def test_the_readme_has_configuration_blocks() -> None:
    assert len(_toml_blocks()) >= 2  # [hooks] and the main one


def _normal(value: object) -> object:
    return tuple(value) if isinstance(value, list | tuple) else value


@pytest.mark.parametrize("block", _toml_blocks(), ids=lambda b: b.split("\n", 1)[0])
def test_every_readme_block_is_valid_and_names_real_options(block: str) -> None:
    parsed = tomllib.loads(block)  # a placeholder or a typo fails here
    defaults = Config()
    for section, values in parsed.items():
        fields = {f.name for f in dataclasses.fields(getattr(defaults, section))}
        assert set(values) <= fields, f"[{section}]: {set(values) - fields} are not options"


def test_the_configuration_and_hooks_blocks_state_the_defaults() -> None:
    # The blocks that list a section's options (the others show an example setting).
    listed = [b for b in _toml_blocks() if b.startswith(("[embedding]", "[hooks]"))]
    assert len(listed) == 2
    defaults = Config()
    for block in listed:
        for section, values in tomllib.loads(block).items():
            known = getattr(defaults, section)
            for key, value in values.items():
                if (section, key) not in EXAMPLES:
                    assert _normal(getattr(known, key)) == _normal(value), f"[{section}] {key}"
