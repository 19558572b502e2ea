"""workers/ is layered (docs/architecture.md): each subpackage imports only the ones below it,
so dependencies point one way (issue 15). The pure core imports no Django and no I/O client,
and operator actions take their Redis client and key names from the caller, never from
process-wide settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.imports import graph, imports

ROOT = Path(__file__).resolve().parents[2]

# What each part of workers/ may import besides itself.
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "models": {"core"},
    "gate": {"core"},
    # Errors grouped: the pure fingerprint of a failure's text (stdlib only).
    "errors": set(),
    "redis": {"core", "errors"},
    "store": {"core", "models"},
    "runtime": {"core", "models"},
    "policy": {"core"},
    "monitor": {"core", "redis", "runtime", "retention"},
    "engine": {
        "core",
        "models",
        "gate",
        "redis",
        "store",
        "runtime",
        "monitor",
        "policy",
        "waits",
        "retention",
        "fanout",
    },
    # Several agents per event type: the groups a process reads, where each starts.
    "fanout": {"core", "redis"},
    # How far back streams reach: the trim by age and length, and its record.
    "retention": {"core", "redis"},
    # Runs that wait (ctx.sleep, ctx.wait_for_event) and the operators' answers.
    "waits": {"core", "redis"},
    # Delayed and scheduled events; the recorder's lease is the fleet's lease pattern.
    "timers": {"core", "redis", "monitor"},
    "operations": {"core", "models", "gate", "redis", "store", "waits", "errors"},
    # A range of the stream fed back to one agent, as a bulk job of operations'.
    "replay": {"core", "redis", "models", "store", "operations", "fanout"},
    # publish() with no client falls back to this process's settings: the public API's edge.
    "producers": {"core", "models", "redis", "from_settings", "timers"},
    "from_settings": {"core", "redis", "runtime", "timers"},
}


def part(module: str) -> str | None:
    """The layer a module of workers/ belongs to, None for the edges (the public API,
    the app, the admin, the CLI, the examples) and for console/."""
    parts = module.split(".")
    if parts[0] != "workers" or len(parts) < 2:
        return None
    return parts[1] if parts[1] in ALLOWED else None


def violations(edges: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in sorted(edges.items()):
        layer = part(module)
        if layer is None:
            continue
        for target in sorted(targets):
            other = part(target)
            if other is not None and other != layer and other not in ALLOWED[layer]:
                found.append(f"{module} -> {target}")
    return found


def test_dependencies_point_one_way() -> None:
    assert violations(graph()) == []


def core_modules() -> list[Path]:
    return sorted((ROOT / "workers" / "core").rglob("*.py"))


@pytest.mark.parametrize("path", core_modules(), ids=lambda p: p.name)
def test_core_is_pure(path: Path) -> None:
    imported = {name.split(".")[0] for name in imports(path)}
    assert not imported & {"django", "redis", "psycopg", "channels"}


def test_a_wrong_way_import_is_reported() -> None:
    edges = {
        "workers.store.runs": {"workers.engine.worker", "workers.core.steps"},
        "workers.operations.pending": {"workers.from_settings", "workers.redis.consumers"},
        "workers.management.commands.claim": {"workers.from_settings"},
    }
    assert violations(edges) == [
        "workers.operations.pending -> workers.from_settings",
        "workers.store.runs -> workers.engine.worker",
    ]
