"""No import cycles in the product: every import of workers/ and console/, at the top of a
module or inside a function, points one way (issue 15). A cycle hidden in a function-level
import is still a cycle: it only moves the failure from import time to run time."""

from __future__ import annotations

from tests.support.imports import cycles, graph


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
