"""No class name is defined twice across the product (workers/ and console/): a reader who
meets ``RunStore`` or ``Outcome`` knows which one it is without reading the import."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("workers", "console")
# Django names these itself: every management command module's ``Command``, every
# migration's ``Migration``. The example apps are demo-only (installed by STREAMDESK_DEMO=1),
# not the product: their models and states are named for their own domain.
EXEMPT_DIRS = ("management/commands", "migrations", "workers/examples")


def module_classes(path: Path) -> list[str]:
    """The classes a module defines at its top level (nested ones, like a model's ``Meta``,
    belong to their class)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [node.name for node in tree.body if isinstance(node, ast.ClassDef)]


def product_modules() -> list[Path]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if not any(f"{d}/" in relative for d in EXEMPT_DIRS):
                found.append(path)
    return found


def test_no_class_name_is_defined_twice() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in product_modules():
        for name in module_classes(path):
            where[name].append(path.relative_to(ROOT).as_posix())
    assert {name: paths for name, paths in where.items() if len(paths) > 1} == {}


def test_the_walk_sees_the_product() -> None:
    # A walk that found nothing would pass the test above for nothing.
    names = {name for path in product_modules() for name in module_classes(path)}
    assert {"Worker", "EngineConfig", "Sampler"} <= names
