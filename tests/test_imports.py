"""The import graph of exactlearn/ has no cycles (imports inside functions included).

The graph is built from the source with ``ast``: every ``import`` and ``from ...
import`` anywhere in a module (module level or inside a function) is an edge,
except those under ``if TYPE_CHECKING:`` (annotations only, never executed).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "exactlearn"


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from (n for child in node.orelse for n in _imports_of(child))
            continue
        yield from _imports_of(node)


def _imports_of(node: ast.AST):
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
    else:
        yield from _imports(node)


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """``module -> modules of the package it imports`` (``from . import x`` counts as ``pkg.x``)."""
    modules = {module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle ``[a, b, ..., a]``, or ``None``."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_package_import_graph_is_acyclic():
    graph = import_graph()
    assert "exactlearn.learn" in graph and "exactlearn.schedule" in graph["exactlearn.learn"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_a_planted_cycle_is_found(tmp_path):
    pkg = tmp_path / "exactlearn"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("def f():\n    from .sub import g\n    return g\n")
    (pkg / "sub" / "__init__.py").write_text("from .b import g\n")
    (pkg / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a import f\n"
        "def g():\n    return 1\n")
    graph = import_graph(pkg)
    assert find_cycle(graph) is None            # the TYPE_CHECKING import is not an edge
    (pkg / "sub" / "b.py").write_text("def g():\n    from .. import a\n    return a\n")
    assert find_cycle(import_graph(pkg)) is not None


#: The layers of exactlearn/approx/ (its package docstring): a module imports its own layer and
#: those listed for it, nothing above or beside. Above them: exactlearn.approx and its learn_approx.
APPROX_LAYERS = {"core": set(), "bounds": {"core"}, "guide": {"core"}}


def approx_layer(module: str) -> str | None:
    """``core``, ``sensitivity``, ``guide``, ``top`` (exactlearn.approx and its other modules), or
    ``None`` outside exactlearn.approx."""
    parts = module.split(".")
    if parts[:2] != ["exactlearn", "approx"]:
        return None
    return parts[2] if len(parts) > 2 and parts[2] in APPROX_LAYERS else "top"


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a layer of exactlearn.approx that goes up or sideways, or out to the figures
    (exactlearn.demos)."""
    found = []
    for module, targets in sorted(graph.items()):
        layer = approx_layer(module)
        if layer is None:
            continue
        for target in sorted(targets):
            other = approx_layer(target)
            allowed = {layer, *APPROX_LAYERS[layer]} if layer != "top" else {"top", *APPROX_LAYERS}
            if target.startswith("exactlearn.demos") or other not in allowed | {None}:
                found.append(f"{module} -> {target}")
    return found


def test_the_approx_layers_import_only_downward():
    graph = import_graph()
    assert "exactlearn.approx.core.field" in graph["exactlearn.approx.bounds.jacobian"]
    assert "exactlearn.approx.core.copyfun" in graph["exactlearn.approx.guide.sketch"]
    assert {approx_layer(m) for m in graph} == {None, "top", *APPROX_LAYERS}
    assert layer_violations(graph) == []


def test_an_upward_or_sideways_import_is_found(tmp_path):
    approx = tmp_path / "exactlearn" / "approx"
    for layer in ("core", "bounds", "guide"):
        (approx / layer).mkdir(parents=True)
        (approx / layer / "__init__.py").write_text("")
    (tmp_path / "exactlearn" / "__init__.py").write_text("")
    (approx / "__init__.py").write_text("from .learn import go\n")
    (approx / "learn.py").write_text("from .guide.b import g\nfrom .bounds.c import h\n"
                                     "def go():\n    pass\n")
    (approx / "core" / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..guide.b import g\n")
    (approx / "guide" / "b.py").write_text("from ..core.a import f\ndef g():\n    pass\n")
    (approx / "bounds" / "c.py").write_text("from ..core import a\ndef h():\n    pass\n")
    assert layer_violations(import_graph(tmp_path / "exactlearn")) == []  # TYPE_CHECKING: no edge
    (approx / "core" / "a.py").write_text("def f():\n    from .. import learn\n    return learn\n")
    (approx / "bounds" / "c.py").write_text("from ..guide.b import g\n")
    assert layer_violations(import_graph(tmp_path / "exactlearn")) == [
        "exactlearn.approx.bounds.c -> exactlearn.approx.guide.b",
        "exactlearn.approx.core.a -> exactlearn.approx.learn"]
