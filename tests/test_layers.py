"""The layers of streamlearn import only downward, and no packages or modules import in a cycle.

DESIGN.md orders the library in layers; each may import only from the layers above it:

    errors, data, features, engine, solvers, io, models, plot, then the package root
    (``streamlearn/__init__.py``) and ``cli.py`` at the bottom (they may import anything).

Every ``import``/``from ... import`` of a ``streamlearn`` module anywhere in a file counts:
at module scope, inside a function (a lazy import is still a dependency: it runs, just
later) and inside ``if TYPE_CHECKING:`` blocks. A ``TYPE_CHECKING`` import counts too: it
does not run, but an annotation naming a lower layer's type still makes the upper layer
know about the lower one; declare a ``Protocol`` in the upper layer instead.

``from streamlearn import name`` imports the package root, which sits at the bottom (it
imports every layer), so from any other layer it is an upward import.

Importing ``streamlearn.a.b`` also executes the ``__init__`` of ``streamlearn`` and
``streamlearn.a``; that implicit parent import is not counted (it is how Python packages
work, and the root's re-exports are the public surface, not a dependency of the layers).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "streamlearn"
PACKAGE = "streamlearn"

#: The layers, top first: a module may import from its own layer and the layers before it.
#: Each layer lists the module prefixes it holds (a prefix covers the module and everything
#: below it). ``streamlearn.version`` is where ``__version__`` belongs (in the top layer, so
#: every layer may read it); it is listed before it exists so that adding it needs no edit.
#: ``streamlearn.warning_origin`` (where a warning points) sits beside the errors: every
#: layer that warns reads it; so does ``streamlearn.atomic_file`` (how an output file is
#: written), which every layer that writes one (data, engine, io, cli) uses.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("errors", ("streamlearn.errors", "streamlearn.version", "streamlearn.warning_origin",
                "streamlearn.atomic_file")),
    ("data", ("streamlearn.data",)),
    ("features", ("streamlearn.features",)),
    ("engine", ("streamlearn.engine",)),
    ("solvers", ("streamlearn.solvers",)),
    ("io", ("streamlearn.io",)),
    ("models", ("streamlearn.models",)),
    ("plot", ("streamlearn.plot",)),
    ("root and cli", ("streamlearn", "streamlearn.cli", "streamlearn.__main__")),
)
LAYER_RANK = {name: rank for rank, (name, _) in enumerate(LAYERS)}

#: Upward imports that exist today and are waiting for their fix, by
#: (importing file, imported module) -> why it is there and what removes it.
#: Remove an entry when its import goes; ``test_known_violations_still_exist`` says when.
#: Never add one for new code: import downward, or move the code to the layer it belongs to.
KNOWN_VIOLATIONS: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Import:
    """One import of a streamlearn module found in a source file."""

    file: str  # path relative to the repository root, with "/"
    line: int
    importer: str  # dotted name of the importing module
    imported: str  # dotted name of the imported module
    where: str  # "module scope", "inside a function" or "TYPE_CHECKING"


def module_name(path: Path) -> str:
    """Dotted module name of a file under ``streamlearn/``."""
    parts = list(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_files() -> list[Path]:
    """Every Python file of the package."""
    return sorted(PACKAGE_ROOT.rglob("*.py"))


def known_modules() -> set[str]:
    """Dotted names of every module and package of streamlearn."""
    return {module_name(path) for path in source_files()}


def layer_of(module: str) -> str | None:
    """The layer holding ``module`` (longest matching prefix), None when no layer lists it."""
    best: tuple[int, str] | None = None
    for name, prefixes in LAYERS:
        for prefix in prefixes:
            covers = module == prefix or (prefix != PACKAGE and module.startswith(prefix + "."))
            if covers and (best is None or len(prefix) > best[0]):
                best = (len(prefix), name)
    return None if best is None else best[1]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _resolve_from(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The absolute module named by ``from ... import`` (relative imports resolved)."""
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_in(path: Path, modules: set[str], text: str | None = None) -> list[Import]:
    """Every import of a streamlearn module in ``path``, wherever it stands in the file.

    ``text`` replaces the file's contents when given.
    """
    importer = module_name(path)
    is_package = path.name == "__init__.py"
    if text is None:
        text = path.read_text(encoding="utf-8")
    tree = ast.parse(text, filename=str(path))
    relative = path.relative_to(PACKAGE_ROOT.parent).as_posix()
    found: list[Import] = []

    def visit(node: ast.AST, where: str) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, "TYPE_CHECKING")
            for child in node.orelse:
                visit(child, where)
            return
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            where = "inside a function" if where == "module scope" else where
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_from(node, importer, is_package)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                targets.append(submodule if submodule in modules else base)
        for target in dict.fromkeys(targets):  # once per statement and module
            if target == PACKAGE or target.startswith(PACKAGE + "."):
                found.append(Import(relative, node.lineno, importer, target, where))
        for child in ast.iter_child_nodes(node):
            visit(child, where)

    visit(tree, "module scope")
    return found


def all_imports() -> list[Import]:
    """Every streamlearn import of every streamlearn module."""
    modules = known_modules()
    return [imp for path in source_files() for imp in imports_in(path, modules)]


def upward_imports(imports: list[Import] | None = None) -> list[Import]:
    """Those of ``imports`` (default: all) that import a lower layer than the importer's."""
    out = []
    for imp in all_imports() if imports is None else imports:
        have, want = layer_of(imp.importer), layer_of(imp.imported)
        if have is None or want is None:
            continue  # reported by test_every_module_has_a_layer
        if LAYER_RANK[want] > LAYER_RANK[have]:
            out.append(imp)
    return out


def describe_import(imp: Import) -> str:
    return (f"{imp.file}:{imp.line} ({layer_of(imp.importer)} layer) imports {imp.imported} "
            f"({layer_of(imp.imported)} layer, lower), {imp.where}")


def package_of(module: str) -> str:
    """The top-level unit a module belongs to: ``streamlearn.<first part>``, or the root."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def import_cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected groups of more than one node (module or package) in ``edges``."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(node: str) -> None:  # Tarjan's algorithm; the graph has a dozen nodes
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return groups


# -- the checks of the test helpers themselves -----------------------------------------------
def test_parser_sees_lazy_type_checking_and_relative_imports() -> None:
    text = (
        "from typing import TYPE_CHECKING\n"
        "from .passes import Pass\n"
        "if TYPE_CHECKING:\n"
        "    from streamlearn.models.base import StreamEstimator\n"
        "def f():\n"
        "    import streamlearn.io.model_file\n"
        "    from streamlearn import errors\n"
    )
    # Parsed as if it were the text of streamlearn/engine/__init__.py.
    found = imports_in(PACKAGE_ROOT / "engine" / "__init__.py", known_modules(), text)
    assert [(i.line, i.imported, i.where) for i in found] == [
        (2, "streamlearn.engine.passes", "module scope"),
        (4, "streamlearn.models.base", "TYPE_CHECKING"),
        (6, "streamlearn.io.model_file", "inside a function"),
        (7, "streamlearn.errors", "inside a function"),
    ]
    assert layer_of("streamlearn") == "root and cli"
    assert layer_of("streamlearn.engine.local") == "engine"
    assert layer_of("streamlearn.errors") == "errors"
    assert import_cycles({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == [["a", "b", "c"]]
    assert import_cycles({("a", "b"), ("b", "c")}) == []
    upward = Import("streamlearn/engine/local.py", 3, "streamlearn.engine.local",
                    "streamlearn.models.base", "inside a function")
    downward = Import("streamlearn/models/base.py", 3, "streamlearn.models.base",
                      "streamlearn.engine.local", "module scope")
    root = Import("streamlearn/solvers/dcd.py", 3, "streamlearn.solvers.dcd", "streamlearn",
                  "module scope")
    assert upward_imports([upward, downward, root]) == [upward, root]


# -- the rules ---------------------------------------------------------------------------------
def test_every_module_has_a_layer() -> None:
    unplaced = sorted(m for m in known_modules() if layer_of(m) is None)
    assert not unplaced, (
        f"modules in no layer: {unplaced}; add them to LAYERS in tests/test_layers.py "
        "(and to the layer picture of DESIGN.md)")


def test_layers_import_only_downward() -> None:
    new = [imp for imp in upward_imports()
           if (imp.file, imp.imported) not in KNOWN_VIOLATIONS]
    assert not new, "imports of a lower layer:\n" + "\n".join(map(describe_import, new))


def test_known_violations_still_exist() -> None:
    present = {(imp.file, imp.imported) for imp in upward_imports()}
    fixed = sorted(key for key in KNOWN_VIOLATIONS if key not in present)
    assert not fixed, (
        f"these upward imports are gone: remove them from KNOWN_VIOLATIONS: {fixed}")


def test_no_import_cycle_between_packages() -> None:
    edges = {
        (package_of(imp.importer), package_of(imp.imported))
        for imp in all_imports()
        if (imp.file, imp.imported) not in KNOWN_VIOLATIONS
        and package_of(imp.importer) != package_of(imp.imported)
    }
    cycles = import_cycles(edges)
    assert not cycles, f"packages importing each other (directly or through others): {cycles}"


def test_no_import_cycle_between_modules() -> None:
    # Lazy imports included: an import moved inside a function to dodge a cycle is still one.
    edges = {
        (imp.importer, imp.imported)
        for imp in all_imports()
        if (imp.file, imp.imported) not in KNOWN_VIOLATIONS and imp.importer != imp.imported
    }
    cycles = import_cycles(edges)
    assert not cycles, f"modules importing each other (directly or through others): {cycles}"


# -- the engine protocol: one reduce ----------------------------------------------------------
def _methods_named(name: str, under: Path) -> list[str]:
    """``file:Class`` of every class under ``under`` that defines a method ``name``."""
    out = []
    for path in sorted(under.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(item, ast.FunctionDef) and item.name == name
                    for item in node.body):
                out.append(f"{path.relative_to(PACKAGE_ROOT.parent).as_posix()}:{node.name}")
    return out


def test_engines_share_one_reduce() -> None:
    from streamlearn.engine import DaskEngine, Engine, EngineBase, LocalEngine
    from streamlearn.engine.checkpoint import CheckpointedRunner

    assert _methods_named("reduce", PACKAGE_ROOT / "engine") == [
        "streamlearn/engine/passes.py:Engine", "streamlearn/engine/passes.py:EngineBase"]
    for engine in (LocalEngine, DaskEngine, CheckpointedRunner):
        assert issubclass(engine, EngineBase)
        assert "run" in vars(engine), f"{engine.__name__} must implement run"
    assert isinstance(LocalEngine(), Engine)
