"""The outbox tests' agent: counts its runs per event id."""

from __future__ import annotations

from collections import Counter
from typing import Any

from tests.support.engine import AnyData
from workers.core.registry import Registry


def counting_registry(runs: Counter[str]) -> Registry:
    registry = Registry()

    async def count(event: Any, ctx: Any) -> dict[str, Any]:
        runs[event.id] += 1
        return {"n": event.data.model_dump().get("n")}

    registry.register("test.changed", AnyData, count)
    return registry
