"""The settler, the housekeeper and the settle plan are given their collaborators: none of
them imports the engine or names its ``Worker`` (issue 15, 'No cycles')."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

WORKERS = Path(__file__).resolve().parents[2] / "workers"


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports, type-checking-only imports included."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


@pytest.mark.parametrize("name", ["settle", "housekeeping", "settlement", "ports"])
def test_engine_parts_do_not_import_the_engine(name: str) -> None:
    path = WORKERS / "engine" / f"{name}.py"
    assert "workers.engine.worker" not in imported(path)
    names = {n.id for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Name)}
    assert "Worker" not in names
