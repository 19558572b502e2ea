"""The product's import graph, read from the source: shared by the unit tests that hold its
rules (no cycle, layers point one way). By default every import counts, function-level ones
included; ``module_level=True`` keeps only what runs when a module is imported."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("workers", "console")
# Bodies that run when called, not when their module is imported.
DEFERRED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def _nodes(tree: ast.Module, module_level: bool) -> Iterator[ast.AST]:
    """Every node, or, at module level, every node outside a function body (a class body and
    an ``if`` at the top run at import time, so their imports count)."""
    if not module_level:
        yield from ast.walk(tree)
        return
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        yield node
        todo.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, DEFERRED))


def _absolute(node: ast.ImportFrom, package: str | None) -> str | None:
    """The dotted name a ``from`` import reads from, a relative one resolved against the
    importing module's package (None when it has none, or the dots climb out of it)."""
    if node.level == 0:
        return node.module
    if package is None:
        return None
    parts = package.split(".")
    if node.level - 1 >= len(parts):
        return None
    base = ".".join(parts[: len(parts) - (node.level - 1)])
    return f"{base}.{node.module}" if node.module else base


def imports(path: Path, package: str | None = None, *, module_level: bool = False) -> set[str]:
    """The dotted names a module imports (``from a import b`` gives ``a`` and ``a.b``: b may be
    a module); ``package`` is the module's own package, for relative imports."""
    names: set[str] = set()
    for node in _nodes(ast.parse(path.read_text()), module_level):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (base := _absolute(node, package)):
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def graph(*, module_level: bool = False) -> dict[str, set[str]]:
    known = modules()

    def owner(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = {owner(i) for i in imports(path, package, module_level=module_level)}
        # A module importing its own package (``from workers import stats``) is not an edge
        # back: the package's __init__ is the public API that re-exports its modules.
        edges[name] = {t for t in targets if t and t != name and not name.startswith(f"{t}.")}
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found
