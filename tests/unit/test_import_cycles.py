"""No import cycles in the product: every import of workers/ and console/, at the top of a
module or inside a function, points one way (issue 15). A cycle hidden in a function-level
import is still a cycle: it only moves the failure from import time to run time."""

from __future__ import annotations

from tests.support.imports import graph


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


def test_the_product_has_no_import_cycle() -> None:
    assert cycles(graph()) == []


def test_the_check_finds_a_cycle_and_reads_the_product() -> None:
    edges = graph()
    assert "workers.engine.serve" in edges["workers.management.commands.runworker"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_workers_never_imports_console() -> None:
    edges = graph()
    assert [
        (m, t)
        for m, targets in edges.items()
        if m.startswith("workers")
        for t in targets
        if t.startswith("console")
    ] == []
