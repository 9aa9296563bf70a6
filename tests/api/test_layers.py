"""The package's modules form layers without an import circle.

The layer table in ``ddflow/__init__.py``'s docstring is the specification: every module of the
package (``algorithms``, ``examples``, ``sql`` and ``spark`` sit on top and are not checked) is in
exactly one layer, and imports only modules of its own layer or below, counting imports inside
``if TYPE_CHECKING:`` and inside functions. The import graph has no cycle. Imports inside
functions are few, and each says why in a comment.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import ddflow

PACKAGE = Path(ddflow.__file__).parent
ON_TOP = ("spark", "algorithms", "examples", "sql", "io")
MAX_FUNCTION_IMPORTS = 5


def _layers() -> dict[str, int]:
    """Module name -> layer number, from the table in the package docstring."""
    layers: dict[str, int] = {}
    for line in (ddflow.__doc__ or "").splitlines():
        m = re.fullmatch(r"\s+(\d) \w+:\s+(.+)", line)
        if m:
            for name in m.group(2).split(","):
                assert name.strip() not in layers, f"{name.strip()} is in two layers"
                layers[name.strip()] = int(m.group(1))
    return layers


def _files() -> dict[str, list[Path]]:
    """Every checked module's files: a module's own, or all of a subpackage's (``_core`` is
    native: its stub has no imports)."""
    files = {p.stem: [p] for p in PACKAGE.glob("*.py")}
    files.pop("__init__")
    for init in PACKAGE.glob("*/__init__.py"):
        if init.parent.name not in ON_TOP:
            files[init.parent.name] = sorted(init.parent.glob("*.py"))
    return files


def _modules() -> dict[str, ast.Module]:
    """Every checked module's syntax tree (a subpackage's modules as one tree)."""
    trees = {}
    for name, paths in _files().items():
        body = [stmt for p in paths for stmt in ast.parse(p.read_text(), str(p)).body]
        trees[name] = ast.Module(body=body, type_ignores=[])
    return trees


def _target(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The ddflow modules an import statement reads."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif node.level or node.module is None:
        raise AssertionError(f"relative import at line {node.lineno}; use absolute imports")
    elif node.module == "ddflow":
        names = [f"ddflow.{a.name}" for a in node.names]
    else:
        names = [node.module]
    out = []
    for name in names:
        parts = name.split(".")
        if parts[0] == "ddflow":
            out.append(parts[1] if len(parts) > 1 else "__init__")
    return out


def _imports(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement with whether it runs inside a function."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                found.append((child, in_function))
            inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            visit(child, inner)

    visit(tree, False)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {
        name: {t for node, _ in _imports(tree) for t in _target(node) if t not in (*ON_TOP, name)}
        for name, tree in modules.items()
    }


def test_every_module_has_one_layer() -> None:
    layers = _layers()
    missing = sorted(set(_modules()) - set(layers))
    assert not missing, f"add {missing} to the layer table in ddflow/__init__.py"
    stale = sorted(set(layers) - set(_modules()) - {"_core"})
    assert not stale, f"the layer table names modules that do not exist: {stale}"


def test_imports_point_down() -> None:
    layers = _layers()
    upward = [
        f"{module} (layer {layers[module]}) imports {target} (layer {layers[target]})"
        for module, targets in _graph().items()
        for target in targets
        if target != "__init__" and layers[target] > layers[module]
    ]
    assert not upward, "\n".join(upward)
    into_package = [m for m, targets in _graph().items() if "__init__" in targets]
    assert not into_package, f"modules importing the package itself: {into_package}"


def test_no_import_circle() -> None:
    graph = _graph()
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            cycle = path[path.index(module) :] + [module]
            raise AssertionError("import circle: " + " -> ".join(cycle))
        if module in done:
            return
        for target in sorted(graph.get(module, ())):
            visit(target, [*path, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])


def _function_imports(path: Path) -> list[tuple[str, bool]]:
    """Where a file imports ddflow inside a function, and whether a comment says why."""
    lines = path.read_text().splitlines()
    found = []
    for node, in_function in _imports(ast.parse("\n".join(lines), str(path))):
        if in_function and _target(node):
            here, above = lines[node.lineno - 1], lines[node.lineno - 2]
            explained = "#" in here or above.strip().startswith("#")
            found.append((f"{path.relative_to(PACKAGE)}:{node.lineno}", explained))
    return found


def test_few_imports_inside_functions_each_explained() -> None:
    local = []
    for paths in _files().values():
        for path in paths:
            local += _function_imports(path)
    assert len(local) <= MAX_FUNCTION_IMPORTS, f"imports of ddflow inside functions: {local}"
    unexplained = [where for where, explained in local if not explained]
    assert not unexplained, f"say why these imports are inside functions: {unexplained}"


def test_the_checker_sees_circles_and_function_imports() -> None:
    tree = ast.parse("def f():\n    from ddflow.dataflow import Dataflow\n")
    ((node, in_function),) = _imports(tree)
    assert in_function and _target(node) == ["dataflow"]
    tree = ast.parse(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import ddflow.plan\n"
    )
    assert [_target(n) for n, f in _imports(tree) if not f] == [[], ["plan"]]
