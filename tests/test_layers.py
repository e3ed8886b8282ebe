"""The package's import graph: no cycles, and no module imports the front ends above it.

Every module under ``jit/`` (subpackages included) is parsed, not imported, and each
``import``/``from … import`` of a jit module becomes an edge: relative or absolute,
at module level, inside a function (a function-local import is still a dependency,
only a later one), or under ``if TYPE_CHECKING:`` (a type the module's API names).
A cycle among them is what makes a newcomer read two modules at once, and what
function-local imports used to hide.

Layers: :data:`LAYERS` maps a module, or a subpackage by its prefix, to a number; a
module may import its own layer and the ones below, never one above. Every module
must have a layer, so a new module or wing is placed on purpose.

The package root is the public façade (jit/__init__.py: lazy re-exports). Modules
inside the package may take only ``__version__`` from it, which it defines without
importing anything but the errors, so the façade can never close a cycle.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

import pytest

import jit

PACKAGE = Path(jit.__file__).parent
ROOT = "jit"

#: Module (or subpackage prefix) -> layer. A module imports its own layer and the ones
#: below, never one above (docs/ARCHITECTURE.md draws the same picture). The flat core's
#: foundation (errors, models, config, ...) is the bottom; the wings stack on it; the
#: pipeline and the presentation helpers orchestrate them; the front ends run it all.
LAYERS: dict[str, int] = {
    "jit.errors": 0, "jit.models": 0, "jit.config": 0, "jit.jsonfile": 0, "jit.paths": 0,
    "jit.process": 0, "jit.text": 0, "jit.schemas": 0, "jit.salvage": 0, "jit.jsonrpc": 0, "jit.lines": 0,
    "jit.display": 0, "jit.servers_config": 0, "jit.progress": 0, "jit.flags": 0,
    "jit.config_files": 0, "jit.validation": 0,
    # The embedders need no catalog; the catalog's embedding passes (catalog/embedding_pass.py) use them.
    "jit.embedding": 1,
    # Prompt injection in tool text: text in, flags out; the analyzers use its entry points.
    "jit.injection": 1,
    "jit.catalog": 2,
    "jit.client": 3,
    "jit.analysis": 3,
    "jit.selection": 4,
    "jit.pipeline": 5,
    "jit.payloads": 5,
    "jit.serve": 6,
    # Framework adapters (jit/adapters/): a compiled tool set handed to an agent framework, calls through
    # the compiler's role check and the client manager; beside the front ends, never under them.
    "jit.adapters": 6,
    # Answers `initialize` before anything heavy loads: it may import nothing of jit's wings
    # (test_serve_early.py checks it loads no third-party package either).
    "jit.serve.early": 0,
    "jit.evaluation": 6,
    # What agent frameworks and harnesses are given: jit's tools and sub-agents scoped by role.
    "jit.adapters": 6,
    "jit.cli": 7,
    "jit.__main__": 7,
}

#: What modules inside the package may import from the package root.
ROOT_NAMES = frozenset({"__version__"})


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    kind: str  # "top", "local" (inside a function) or "type" (under TYPE_CHECKING)
    names: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} ({self.source.replace('.', '/')}.py:{self.line}, {self.kind})"


@functools.cache
def parsed(path: Path) -> ast.Module:
    """``path``'s syntax tree, parsed once for the module's tests (which only read it)."""
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (``jit`` is jit/__init__.py)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _kinds(tree: ast.Module) -> dict[int, str]:
    """``id(node) -> kind`` for the imports nested in functions or TYPE_CHECKING blocks."""
    kinds: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            kind = "local"
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            kind = "type"
        else:
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.Import | ast.ImportFrom):
                kinds.setdefault(id(inner), kind)
    return kinds


def imports(name: str, path: Path, known: dict[str, Path]) -> list[Edge]:
    """The jit modules ``name`` imports, one edge per imported module and statement."""
    tree = parsed(path)
    kinds = _kinds(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def resolve(dotted: str) -> str | None:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    edges = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            candidates = [(a.name, ()) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # ``from . import holders`` imports a module; ``from . import __version__`` a name.
            candidates = [(f"{module}.{a.name}", ()) if f"{module}.{a.name}" in known else (module, (a.name,))
                          for a in node.names]
        else:
            continue
        targets: dict[str, tuple[str, ...]] = {}
        for dotted, names in candidates:
            target = resolve(dotted)
            if target is not None and target != name and (target == ROOT or target.startswith(ROOT + ".")):
                targets[target] = targets.get(target, ()) + names
        edges += [Edge(name, target, node.lineno, kinds.get(id(node), "top"), names)
                  for target, names in targets.items()]
    return edges


def import_graph() -> dict[str, list[Edge]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def find_cycle(graph: dict[str, list[Edge]]) -> list[Edge] | None:
    """One import cycle as its edges, or None (depth-first search, deterministic order)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[Edge] = []

    def visit(node: str) -> list[Edge] | None:
        state[node] = 1
        for edge in sorted(graph.get(node, []), key=lambda e: (e.target, e.line)):
            if state.get(edge.target) == 1:
                start = next((i for i, e in enumerate(path) if e.source == edge.target), len(path))
                return path[start:] + [edge]
            if edge.target not in state:
                path.append(edge)
                found = visit(edge.target)
                if found:
                    return found
                path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def layer(module: str) -> int:
    """The layer of ``module``: its longest prefix in :data:`LAYERS` (every module has one)."""
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        if (prefix := ".".join(parts[:i])) in LAYERS:
            return LAYERS[prefix]
    raise AssertionError(f"{module} has no layer in tests/test_layers.py's LAYERS: add its wing")


def _package_edges(graph: dict[str, list[Edge]]) -> dict[str, list[Edge]]:
    """The graph without imports of ``__version__`` from the root (see the module docstring)."""
    return {name: [e for e in edges if not (e.target == ROOT and set(e.names) <= ROOT_NAMES)]
            for name, edges in graph.items()}


@pytest.fixture(scope="module")
def graph() -> dict[str, list[Edge]]:
    """The package's import graph, parsed once for the module's tests (none changes it)."""
    return import_graph()


def test_the_graph_sees_every_kind_of_import(graph) -> None:
    """The parser finds what it must, so a pass below means something."""
    assert {"jit", "jit.cli", "jit.catalog.store", "jit.errors"} <= graph.keys()
    kinds = {e.kind for edges in graph.values() for e in edges}
    assert kinds == {"top", "local", "type"}, kinds
    assert any(e.target == "jit.catalog.holders" for e in graph["jit.catalog.store_servers"])  # ``from . import holders``
    synthetic = {"a": [Edge("a", "b", 1, "top")], "b": [Edge("b", "c", 2, "local")], "c": [Edge("c", "a", 3, "type")]}
    assert [e.target for e in find_cycle(synthetic) or []] == ["b", "c", "a"]
    assert find_cycle({"a": [Edge("a", "b", 1, "top")], "b": []}) is None


def test_no_import_cycles(graph) -> None:
    cycle = find_cycle(_package_edges(graph))
    assert cycle is None, "import cycle:\n  " + "\n  ".join(str(e) for e in cycle or [])


def test_modules_take_only_the_version_from_the_package_root(graph) -> None:
    bad = [str(e) + f" imports {', '.join(e.names) or 'the package'}"
           for edges in graph.values() for e in edges
           if e.target == ROOT and e.source != ROOT and not (e.names and set(e.names) <= ROOT_NAMES)]
    assert not bad, "the package root is the public façade; import the defining module instead:\n  " + "\n  ".join(bad)


def test_no_upward_imports(graph) -> None:
    bad = [f"{e} (layer {layer(e.source)} imports layer {layer(e.target)})"
           for edges in _package_edges(graph).values() for e in edges
           if e.source != ROOT and layer(e.target) > layer(e.source)]
    assert not bad, "a module imports a layer above it:\n  " + "\n  ".join(bad)


#: A wing the rest of the package reaches through entry points only: the wing, its entry module and the
#: names the rest may take from it.
ENTRY_POINTS = {
    "jit.injection": ("jit.injection.detect",
                      {"detect_hostile", "detect_hostile_many", "strip_instructions", "HOSTILE_RULES_VERSION"}),
}


def test_a_wing_with_entry_points_is_reached_only_through_them(graph) -> None:
    """The injection detector is text in, flags out: the analyzers call its entry points and nothing of its
    rules, cues or model, so its inside can change without them."""
    bad = []
    for wing, (entry, names) in ENTRY_POINTS.items():
        for edges in graph.values():
            for e in edges:
                if e.source.startswith(wing + ".") or e.source == wing:
                    continue
                if (e.target == wing or e.target.startswith(wing + ".")) and (
                        e.target != entry or not set(e.names) <= names):
                    bad.append(f"{e} takes {', '.join(e.names) or 'the module'}")
    assert not bad, "import the wing's entry points only:\n  " + "\n  ".join(bad)


# ---------------------------------------------------------------------------- one home per name

#: The façades: the package root for users, and the CLI package, whose ``app`` is the one with
#: every command registered (its command modules load when it is first taken from there).
FACADES = frozenset({ROOT, "jit.cli"})
REPO = PACKAGE.parent


def defined(path: Path) -> set[str]:
    """The names a module defines at its top level (functions, classes, assignments, also under ``if``/``try``)."""
    names: set[str] = set()
    for node in parsed(path).body:
        for inner in ast.walk(node) if isinstance(node, ast.If | ast.Try) else (node,):
            if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(inner.name)
            elif isinstance(inner, ast.Assign | ast.AnnAssign):
                targets = inner.targets if isinstance(inner, ast.Assign) else [inner.target]
                names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def _listed(path: Path) -> list[str]:
    for node in parsed(path).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
    return []


def test_a_module_lists_only_names_it_defines() -> None:
    """``__all__`` is what a module holds, not what it passes on: a name listed by a module that
    imports it from another makes "where is X defined" two hops (the façades aside)."""
    bad = [f"{name}: {', '.join(sorted(set(_listed(path)) - defined(path)))}"
           for name, path in modules().items() if name not in FACADES and set(_listed(path)) - defined(path)]
    assert not bad, "modules list names defined elsewhere; import them from their home:\n  " + "\n  ".join(bad)


def test_names_are_imported_from_the_module_that_defines_them() -> None:
    """Every ``from jit.… import name`` in the package, its tests, benchmarks and examples names the
    module that defines ``name`` (or a submodule), so one hop finds it (the façades aside)."""
    known = modules()
    homes = {name: defined(path) for name, path in known.items()}
    bad = []
    for folder in ("jit", "tests", "bench", "examples"):
        for path in sorted((REPO / folder).rglob("*.py")):
            source = path.relative_to(REPO)
            me = ".".join(source.with_suffix("").parts).removesuffix(".__init__")
            package = me if path.name == "__init__.py" else me.rpartition(".")[0]
            for node in ast.walk(parsed(path)):
                if not isinstance(node, ast.ImportFrom) or (node.level and folder != "jit"):
                    continue
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])]) if node.level else node.module or ""
                if module in FACADES or module not in known:
                    continue
                bad += [f"{source}:{node.lineno} takes {a.name} from {module}" for a in node.names
                        if f"{module}.{a.name}" not in known and a.name not in homes[module]]
    assert not bad, "names imported from a module that does not define them:\n  " + "\n  ".join(bad)
