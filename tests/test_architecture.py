"""The layers of docs/design.md#layers hold: no module imports from a layer above its own.

The table is read from docs/design.md itself, so the picture and the check cannot drift apart.
Every import counts: at the top of a module, inside a function (lazy), under
``if TYPE_CHECKING``, and a module named in a string (``"memdir.index.sqlite:SqliteLifecycle"``
in a registry, the lazy re-exports of a package).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src"
DESIGN = REPO / "docs" / "design.md"
ROOT = "memdir"

_ROW = re.compile(r"^\|\s*(\d+)\s[^|]*\|(.*)\|\s*$")
_NAME = re.compile(r"`([\w.]+)`")
_MODULE_STRING = re.compile(r"^(memdir(?:\.\w+)+)(?::\w+)?$")  # "memdir" alone is a name


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` (at ``line``)."""

    source: str
    target: str
    line: int


def layer_table(design: str) -> dict[str, int]:
    """``{package or module: layer}`` from the table under ``## Layers``.

    Raises:
        AssertionError: the section or its table is missing, or a name is listed twice.
    """
    section = design.split("\n## Layers\n", 1)
    assert len(section) == 2, "docs/design.md has no '## Layers' section"
    body = section[1].split("\n## ", 1)[0]
    table: dict[str, int] = {}
    for line in body.splitlines():
        row = _ROW.match(line)
        if row is None:
            continue
        for name in _NAME.findall(row.group(2)):
            assert name not in table, f"{name} is in two rows of the layer table"
            table[name] = int(row.group(1))
    assert table, "the '## Layers' section of docs/design.md has no table rows"
    return table


def layer_of(module: str, table: Mapping[str, int]) -> int | None:
    """The layer of the longest table name that is ``module`` or a package holding it (the
    root package stands for its ``__init__`` only)."""
    best: str | None = None
    for name in table:
        inside = module.startswith(name + ".") and name != ROOT
        if (module == name or inside) and (best is None or len(name) > len(best)):
            best = name
    return None if best is None else table[best]


def source_modules(src: Path = SRC) -> dict[str, Path]:
    """``{dotted name: file}`` of every module under ``src/memdir``."""
    found: dict[str, Path] = {}
    for path in sorted((src / ROOT).rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports_of(module: str, source: str, known: Iterable[str]) -> list[Edge]:
    """Every memdir module that ``source`` (the text of ``module``) imports, wherever the
    import sits, and every memdir module it names in a string constant."""
    modules = set(known)
    is_package = module in modules and any(m.startswith(module + ".") for m in modules)
    edges: list[Edge] = []

    def add(name: str, line: int) -> None:
        while name not in modules and "." in name:
            name = name.rsplit(".", 1)[0]
        if name in modules and name != module:
            edges.append(Edge(module, name, line))

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, base] if base else package)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                add(full if full in modules else base, node.lineno)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            named = _MODULE_STRING.match(node.value)
            if named and named.group(1) in modules:
                add(named.group(1), node.lineno)
    return [e for e in edges if e.target.startswith(ROOT)]


def upward_imports(
    edges: Iterable[Edge], table: Mapping[str, int]
) -> list[tuple[Edge, int | None, int | None]]:
    """The edges whose target sits in a higher layer than their source."""
    bad = []
    for edge in edges:
        here, there = layer_of(edge.source, table), layer_of(edge.target, table)
        if here is None or there is None or there > here:
            bad.append((edge, here, there))
    return bad


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def all_edges() -> list[Edge]:
    modules = source_modules()
    edges: list[Edge] = []
    for name, path in modules.items():
        edges += imports_of(name, path.read_text(encoding="utf-8"), modules)
    return edges


@pytest.fixture(scope="module")
def table() -> dict[str, int]:
    return layer_table(DESIGN.read_text(encoding="utf-8"))


# -- the real tree ---------------------------------------------------------------------------


def test_every_module_has_a_layer(table: dict[str, int]) -> None:
    missing = [m for m in source_modules() if layer_of(m, table) is None]
    assert not missing, f"add these to the table in docs/design.md#layers: {missing}"


def test_every_table_name_is_a_module_or_package(table: dict[str, int]) -> None:
    modules = source_modules()
    assert [name for name in table if name not in modules] == []


def test_no_module_imports_from_a_higher_layer(table: dict[str, int]) -> None:
    bad = [
        f"{e.source} (layer {a}) imports {e.target} (layer {b}) at line {e.line}"
        for e, a, b in upward_imports(all_edges(), table)
    ]
    assert not bad, "imports against docs/design.md#layers:\n" + "\n".join(bad)


def test_storage_engines_are_named_only_by_the_index_registry() -> None:
    from memdir.index.manager import INDEX_ENGINES

    engines = {target.partition(":")[0] for target in INDEX_ENGINES.values()}
    assert len(engines) >= 2
    bad = []
    for edge in all_edges():
        engine = next(
            (e for e in engines if edge.target == e or edge.target.startswith(e + ".")), None
        )
        if engine is None or edge.source == engine or edge.source.startswith(engine + "."):
            continue
        if edge.source != "memdir.index.manager":
            bad.append(f"{edge.source} imports {edge.target} at line {edge.line}")
    assert not bad, "only memdir.index.manager names an engine (docs/design.md#layers):\n" + (
        "\n".join(bad)
    )


# -- the check itself -----------------------------------------------------------------------

TABLE = """# x

## Layers

| layer | modules |
| --- | --- |
| 2 top | `memdir`, `memdir.memory` |
| 1 middle | `memdir.index`, `memdir.index.base` |
| 0 bottom | `memdir.config`, `memdir.errors` |

## Next
| 9 later | `memdir.other` |
"""
KNOWN = [
    "memdir",
    "memdir.memory",
    "memdir.index",
    "memdir.index.base",
    "memdir.config",
    "memdir.errors",
]


def test_the_table_is_read_from_its_section_only() -> None:
    table = layer_table(TABLE)
    assert table == {
        "memdir": 2,
        "memdir.memory": 2,
        "memdir.index": 1,
        "memdir.index.base": 1,
        "memdir.config": 0,
        "memdir.errors": 0,
    }
    assert layer_of("memdir.index.sqlite.store", table) == 1  # inside a listed package
    assert layer_of("memdir.search", table) is None  # the root stands for itself only


def test_an_upward_import_is_found_wherever_it_sits() -> None:
    source = """
from typing import TYPE_CHECKING
import memdir.index.base
from memdir.errors import X
KEYWORD_TOKENIZER = "memdir"

if TYPE_CHECKING:
    from memdir.memory import Memory

def later():
    from memdir import memory
    return "memdir.index:Thing"
"""
    edges = imports_of("memdir.config", source, KNOWN)
    assert {(e.target, e.line) for e in edges} == {
        ("memdir.index.base", 3),
        ("memdir.errors", 4),
        ("memdir.memory", 8),
        ("memdir.memory", 11),
        ("memdir.index", 12),
    }
    bad = upward_imports(edges, layer_table(TABLE))
    assert len(bad) == 4
    assert upward_imports([Edge("memdir.memory", "memdir.config", 1)], layer_table(TABLE)) == []


def test_relative_imports_are_resolved() -> None:
    edges = imports_of("memdir.index.base", "from ..config import x\nfrom . import base\n", KNOWN)
    assert [e.target for e in edges] == ["memdir.config"]


# -- the design's anchors ----------------------------------------------------------------------

_LINK = re.compile(r"design\.md#([\w-]+)")


def heading_anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the headings of ``markdown``."""
    anchors = set()
    for line in markdown.splitlines():
        heading = re.match(r"^#{1,6}\s+(.*)$", line)
        if heading:
            text = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower())
            anchors.add(text.replace(" ", "-"))
    return anchors


def test_every_link_into_the_design_names_a_section() -> None:
    anchors = heading_anchors(DESIGN.read_text(encoding="utf-8"))
    assert {"chunking", "layers", "files-are-the-truth", "memory_get"} <= anchors
    broken = []
    for folder in ("src", "tests", "benchmarks", "docs"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.suffix not in (".py", ".md", ".toml") or "__pycache__" in path.parts:
                continue
            text = path.read_text(encoding="utf-8")
            broken += [f"{path.relative_to(REPO)}: #{a}" for a in _LINK.findall(text)]
    for name in ("README.md", "pyproject.toml"):
        text = (REPO / name).read_text(encoding="utf-8")
        broken += [f"{name}: #{a}" for a in _LINK.findall(text)]
    broken = [b for b in broken if b.rsplit("#", 1)[1] not in anchors]
    assert not broken, "links to missing sections of docs/design.md:\n" + "\n".join(broken)
