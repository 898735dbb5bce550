"""The layers of docs/design.md#layers hold: no module imports from a layer above its own, and
no modules import each other in a circle.

The table is read from docs/design.md itself, so the picture and the check cannot drift apart.
Every import counts: at the top of a module, inside a function (lazy), under
``if TYPE_CHECKING``, and, for the layers, a module named in a string
(``"memdir.index.sqlite:SqliteLifecycle"`` in a registry, the lazy re-exports of a package).

A module directly under ``src/memdir`` has a row entry of its own, and there are at most
:data:`MAX_TOP_LEVEL_MODULES` of them; the scripts of ``benchmarks/`` import each other in no
circle either, and none is over 600 lines.

The design names code too (``search.plan.SearchPlan``): every such name must still be there, so
that a module or a name that moves takes its mention in the design with it.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, is_dataclass
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
    """``source`` imports ``target`` (at ``line``); ``named``: it only names it in a string."""

    source: str
    target: str
    line: int
    named: bool = False


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

    def add(name: str, line: int, named: bool = False) -> None:
        while name not in modules and "." in name:
            name = name.rsplit(".", 1)[0]
        if name in modules and name != module:
            edges.append(Edge(module, name, line, named))

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
                add(named.group(1), node.lineno, named=True)
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


def import_cycles(edges: Iterable[Edge]) -> list[list[str]]:
    """The groups of modules that import each other, directly or through others (the strongly
    connected components of more than one module), each sorted, in order of their first
    module."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        order[node] = low[node] = len(order)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in order:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], order[target])
        if low[node] == order[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return sorted(found)


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


#: The most modules directly under ``src/memdir`` (``__init__.py`` and ``__main__.py`` count):
#: a family of modules that share a prefix is a package named for its part of the architecture.
MAX_TOP_LEVEL_MODULES = 16


def top_level_modules(src: Path = SRC) -> list[str]:
    """The dotted names of the ``.py`` files directly under ``src/memdir`` (``memdir`` for its
    ``__init__``)."""
    return sorted(name for name, path in source_modules(src).items() if path.parent == src / ROOT)


def test_every_top_level_module_has_a_row_entry_of_its_own(table: dict[str, int]) -> None:
    top = top_level_modules()
    assert "memdir.client" in top and "memdir.search" not in top
    missing = [m for m in top if m not in table]
    assert not missing, f"name these in a row of docs/design.md#layers: {missing}"
    assert len(top) <= MAX_TOP_LEVEL_MODULES, (
        f"{len(top)} modules directly under src/memdir (at most {MAX_TOP_LEVEL_MODULES}): move a "
        f"family of them into a package named for its part (docs/design.md#layers): {top}"
    )


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


def test_no_modules_import_each_other_in_a_circle() -> None:
    # A module named in a string is not imported by the one naming it: a registry names the
    # modules that register with it (the CLI's commands), a logger or a resource its package.
    cycles = import_cycles(e for e in all_edges() if not e.named)
    assert not cycles, "modules that import each other (docs/design.md#layers):\n" + "\n".join(
        " ↔ ".join(group) for group in cycles
    )


def local_imports(folder: Path) -> list[Edge]:
    """The imports between the scripts of ``folder`` (``benchmarks/``), which import one another
    by their bare names (``import _common``), wherever the import sits."""
    names = {path.stem for path in folder.glob("*.py")}
    edges = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                targets = [node.module]
            else:
                continue
            edges += [Edge(path.stem, n, node.lineno) for n in targets if n in names - {path.stem}]
    return edges


def test_the_benchmarks_import_each_other_in_no_circle_and_stay_small() -> None:
    folder = REPO / "benchmarks"
    edges = local_imports(folder)
    assert Edge("_runner", "_common", 1).target in {e.target for e in edges}
    cycles = import_cycles(edges)
    assert not cycles, "benchmarks that import each other:\n" + "\n".join(
        " ↔ ".join(group) for group in cycles
    )
    lines = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in folder.glob("*.py")}
    assert {name: n for name, n in lines.items() if n > 600} == {}


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


def test_a_circle_is_found_through_any_import() -> None:
    edges = [
        Edge("memdir.index", "memdir.index.base", 1),
        Edge("memdir.index.base", "memdir.config", 2),
        Edge("memdir.config", "memdir.index", 3),  # lazy or for type checking: a circle still
        Edge("memdir.memory", "memdir.index", 4),
        Edge("memdir.errors", "memdir.memory", 5, named=True),
    ]
    assert import_cycles(edges) == [["memdir.config", "memdir.index", "memdir.index.base"]]
    assert import_cycles(edges[1:]) == []
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import memdir.memory\n"
    assert [e.named for e in imports_of("memdir.config", source, KNOWN)] == [False]
    named = imports_of("memdir.config", 'NAME = "memdir.memory"\n', KNOWN)
    assert [(e.target, e.named) for e in named] == [("memdir.memory", True)]


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


# -- the design's names for code ---------------------------------------------------------------

#: A backticked dotted name (``search.plan.SearchPlan``, ``embeddings/base.UrgentDocuments``).
_CODE_NAME = re.compile(r"`([A-Za-z_]\w*(?:[./]\w+)+)`")
#: A name ending in one of these is a file (``index.lock``, ``rerank/learned.json``).
FILE_SUFFIXES = frozenset({"py", "md", "json", "jsonl", "toml", "lock", "sqlite", "html", "txt"})


def code_reference(name: str, modules: Collection[str]) -> tuple[str, list[str]] | None:
    """The memdir module a backticked ``name`` starts with and the attributes it names inside
    it: ``search.plan.SearchPlan`` → ``("memdir.search.plan", ["SearchPlan"])``. A name is
    read from ``memdir`` (``memdir.`` may be written or left out; ``/`` is a ``.``), else as the
    one module whose dotted name ends with it (``manager.index_identity``); a name the package
    exports starts at the package (``Memory.sync`` → ``("memdir", ["Memory", "sync"])``). None
    when it names no memdir module: a file, a setting (``hnsw.ef_search``), another class's
    attribute (``IndexManager.warm``).

    Raises:
        AssertionError: the name's start fits several modules (write more of it).
    """
    parts = name.replace("/", ".").split(".")
    if parts[-1] in FILE_SUFFIXES:
        return None
    if parts[0] == ROOT:
        parts = parts[1:]
    elif parts[0] in importlib.import_module(ROOT).__all__:
        return ROOT, parts
    for size in range(len(parts), 0, -1):
        head = ".".join(parts[:size])
        fits = [f"{ROOT}.{head}"] if f"{ROOT}.{head}" in modules else []
        fits = fits or sorted(m for m in modules if m.endswith(f".{head}"))
        assert len(fits) <= 1, f"`{name}` could be any of {fits}: name the module in full"
        if fits:
            return fits[0], parts[size:]
    return None


def unresolved(name: str, modules: Collection[str]) -> str | None:
    """Why ``name`` (backticked in the design) names nothing that exists, or None when it does
    (or names no memdir module)."""
    try:
        found = code_reference(name, modules)
    except AssertionError as exc:
        return str(exc)
    if found is None:
        return None
    module, attributes = found
    if not attributes:
        return None  # a module: it is one of the source files (and importing it may run it)
    value: object = importlib.import_module(module)
    for i, attribute in enumerate(attributes):
        if hasattr(value, attribute):
            value = getattr(value, attribute)
        elif is_dataclass(value) and attribute in {f.name for f in dataclasses.fields(value)}:
            return None  # a field without a class-level default (``Config.origins``)
        else:
            where = ".".join([module, *attributes[:i]])
            return f"`{name}`: {where} has no {attribute!r}"
    return None


def test_every_name_the_design_gives_for_code_exists() -> None:
    modules = source_modules()
    names = sorted(set(_CODE_NAME.findall(DESIGN.read_text(encoding="utf-8"))))
    assert "search.plan.SearchPlan" in names
    broken = [why for why in (unresolved(n, modules) for n in names) if why is not None]
    assert not broken, "names in docs/design.md that do not resolve:\n" + "\n".join(broken)


def test_a_moved_name_in_the_design_is_found() -> None:
    modules = ["memdir", "memdir.config", "memdir.config.choices", "memdir.index.manager"]
    assert code_reference("config.INDEX_URL_SCHEMES", modules) == (
        "memdir.config",
        ["INDEX_URL_SCHEMES"],
    )
    assert code_reference("memdir.config.choices.CHOICES", modules) == (
        "memdir.config.choices",
        ["CHOICES"],
    )
    assert code_reference("manager.index_identity", modules) == (
        "memdir.index.manager",
        ["index_identity"],
    )
    assert code_reference("Memory.sync", modules) == ("memdir", ["Memory", "sync"])
    for other in ("config.py", "index.lock", "hnsw.ef_search", "IndexManager.warm"):
        assert code_reference(other, modules) is None
    real = source_modules()
    assert unresolved("config.choices.INDEX_URL_SCHEMES", real) is None
    assert unresolved("config.INDEX_URL_SCHEMES", real) == (
        "`config.INDEX_URL_SCHEMES`: memdir.config has no 'INDEX_URL_SCHEMES'"
    )
    assert "name the module in full" in (unresolved("base.Embedder", real) or "")
    assert unresolved("Config.origins", real) is None  # a dataclass field
    assert unresolved("Memory.recall", real) == "`Memory.recall`: memdir.Memory has no 'recall'"


# -- specs outside the repository ----------------------------------------------------------------

_OUTSIDE_SPEC = re.compile(r"\bSPEC\b|\b[Ss]pec §|\b[Tt]he spec's\b")


def test_nothing_cites_a_spec_outside_the_repository() -> None:
    # The reasons for the code are in docs/design.md and the measurements beside it: a comment
    # that cites a document the reader does not have explains nothing.
    paths = [DESIGN, *sorted((SRC / ROOT).rglob("*.py")), *sorted((REPO / "tests").rglob("*.py"))]
    cited = [
        f"{path.relative_to(REPO)}:{n}"
        for path in paths
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if _OUTSIDE_SPEC.search(line) and path != Path(__file__).resolve()
    ]
    assert not cited, "cites a spec outside the repository:\n" + "\n".join(cited)
