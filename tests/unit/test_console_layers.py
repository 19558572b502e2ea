"""console/ is grouped by concern (issue 27, docs/architecture.md): a few flat modules beside
Django's fixed files, subpackages that each say what lives there and what it may import,
layers that point down (the live layer and the reads never reach the views or the API), and no
import cycle at module level in console/ or workers/."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.imports import cycles, graph, imports

ROOT = Path(__file__).resolve().parents[2]
CONSOLE = ROOT / "console"
# Where Django and channels look for them (settings, ROOT_URLCONF, the app, ASGI and WSGI).
FIXED = {"__init__", "settings", "urls", "asgi", "wsgi", "apps", "routing"}
MAX_FLAT = 10
MIN_SUBPACKAGES = 4

# Flat modules every layer may use: they import no other module of the console.
FOUNDATIONS = {"roles", "params", "runtime", "environment"}
# What each subpackage may import besides itself, the foundations and the engine. The other
# flat modules (urls, asgi, settings, consumers, prometheus_view...) are entry points: they
# may import anything, and nothing but an entry point imports them.
ALLOWED: dict[str, set[str]] = {
    "foundations": set(),
    "edge": set(),
    "live": set(),
    "reads": set(),
    "intake": set(),
    "actions": {"edge", "live", "reads"},
    "templatetags": {"live"},
    "views": {"edge", "live", "reads", "actions"},
}
ENTRY = "entry"
# The rule the issue names, held on its own: no path from these to the pages or the API.
BELOW_THE_PAGES = ("console.live", "console.reads")
THE_PAGES = ("console.views", "console.actions.api")


def flat_modules() -> list[str]:
    return sorted(p.stem for p in CONSOLE.glob("*.py") if p.stem not in FIXED)


def subpackages() -> list[Path]:
    return sorted(p.parent for p in CONSOLE.rglob("__init__.py") if p.parent != CONSOLE)


def part(module: str) -> str | None:
    """The layer a module of console/ belongs to; None outside console/."""
    parts = module.split(".")
    if parts[0] != "console" or len(parts) < 2:
        return None
    if parts[1] in ALLOWED:
        return parts[1]
    return "foundations" if parts[1] in FOUNDATIONS else ENTRY


def violations(edges: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in sorted(edges.items()):
        layer = part(module)
        if layer is None or layer == ENTRY:
            continue
        for target in sorted(targets):
            other = part(target)
            if other in (None, layer, "foundations"):
                continue
            if other == ENTRY or other not in ALLOWED[layer]:
                found.append(f"{module} -> {target}")
    return found


def upward(edges: dict[str, set[str]]) -> list[str]:
    return [
        f"{module} -> {target}"
        for module, targets in sorted(edges.items())
        if module.startswith(BELOW_THE_PAGES)
        for target in sorted(targets)
        if target.startswith(THE_PAGES)
    ]


def test_console_flat_modules_at_most_ten() -> None:
    assert len(flat_modules()) <= MAX_FLAT, flat_modules()


def test_console_subpackages_at_least_four() -> None:
    assert len(subpackages()) >= MIN_SUBPACKAGES


def test_console_subpackages_each_say_what_they_hold() -> None:
    undocumented = [
        str(p.relative_to(ROOT))
        for p in subpackages()
        if not ast.get_docstring(ast.parse((p / "__init__.py").read_text()))
    ]
    assert undocumented == []


def test_console_layers_every_subpackage_has_its_rule() -> None:
    named = {p.relative_to(CONSOLE).parts[0] for p in subpackages()}
    assert named <= set(ALLOWED)
    assert {p for p in FOUNDATIONS if not (CONSOLE / f"{p}.py").is_file()} == set()


def test_console_layers_point_down() -> None:
    assert violations(graph()) == []


def test_console_live_and_reads_never_import_the_pages_or_the_api() -> None:
    assert upward(graph(module_level=True)) == []


def test_console_layers_no_module_level_cycle_in_workers_or_console() -> None:
    assert cycles(graph(module_level=True)) == []


def test_console_layers_a_wrong_way_import_is_reported() -> None:
    edges = {
        "console.live.sampler": {"console.views.dashboard", "console.runtime", "workers.keys"},
        "console.reads.browse": {"console.actions.api", "console.params"},
        "console.actions.api": {"console.reads.previews", "console.live.health"},
        "console.edge.throttle": {"console.urls"},
        "console.runtime": {"console.live.sampler"},
        "console.urls": {"console.views.dashboard", "console.actions.api"},
    }
    assert violations(edges) == [
        "console.edge.throttle -> console.urls",
        "console.live.sampler -> console.views.dashboard",
        "console.reads.browse -> console.actions.api",
        "console.runtime -> console.live.sampler",
    ]
    assert upward(edges) == [
        "console.live.sampler -> console.views.dashboard",
        "console.reads.browse -> console.actions.api",
    ]


def test_console_layers_module_level_reads_no_function_body(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from . import sibling\n"
        "from ..up import thing\n"
        "import a.b\n"
        "class C:\n"
        "    from c import d\n"
        "def f():\n"
        "    from e import g\n"
    )
    found = imports(source, "pkg.sub", module_level=True)
    assert found == {
        "pkg.sub",
        "pkg.sub.sibling",
        "pkg.up",
        "pkg.up.thing",
        "a.b",
        "c",
        "c.d",
    }
    assert {"e", "e.g"} <= imports(source, "pkg.sub")


def test_console_layers_graph_reads_the_console() -> None:
    edges = graph(module_level=True)
    assert "console.live.sampler" in edges["console.live.ticker"]
    # A function-level import is not a module-level edge.
    assert "console.runtime" not in edges["console.live.background"]
    assert "console.runtime" in graph()["console.live.background"]
