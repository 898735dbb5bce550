"""Install hints name packages that exist on the index and match pyproject.toml's extras."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from memdir.extras import EXTRA_PACKAGES, install_hint

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_the_hint_table_matches_pyproject() -> None:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    for extra, packages in EXTRA_PACKAGES.items():
        declared = [(req.split(";")[0].strip(), "Linux" in req) for req in extras[extra]]
        assert list(packages) == declared
    # Every runtime extra that brings packages has a hint (mcp and ui are no-op aliases now).
    assert extras["mcp"] == [] and extras["ui"] == []
    brings = {name for name, reqs in extras.items() if reqs and name not in ("all", "dev")}
    assert brings == set(EXTRA_PACKAGES)


@pytest.mark.parametrize("platform, has_pysqlite", [("linux", True), ("darwin", False)])
def test_hint_lists_the_packages_then_the_checkout_line(
    monkeypatch: pytest.MonkeyPatch, platform: str, has_pysqlite: bool
) -> None:
    monkeypatch.setattr("sys.platform", platform)
    hint = install_hint("vec")
    assert hint.startswith("pip install 'sqlite-vec>=0.1.6'")
    assert ("pysqlite3-binary" in hint) is has_pysqlite
    assert hint.endswith("in a memdir checkout: pip install '.[vec]')")
    assert "memdir[" not in hint  # memdir is not on the index: never `pip install 'memdir[vec]'`


def test_no_source_file_tells_people_to_install_memdir_from_the_index() -> None:
    src = Path(__file__).resolve().parents[1] / "src" / "memdir"
    pattern = re.compile(r"pip install [\"']?memdir\b")
    texts = {p: p.read_text("utf-8") for p in src.rglob("*") if p.suffix in {".py", ".md", ".html"}}
    offenders = [str(path.relative_to(src)) for path, text in texts.items() if pattern.search(text)]
    assert offenders == []
