"""The agents ``make bench-runtime`` compares, in a private registry, and what they time.

Each does the least its runtime feature allows, so the difference between two of them is
the feature's cost: the baseline returns its data; the others add durable steps (an async
step function, so no thread hop is measured) or takes on a budget that never runs dry.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from workers.core.events import Event
from workers.core.registry import Registry
from workers.runtime.context import AgentContext
from workers.runtime.ratelimit import Budget

# So large that no take can ever find the bucket empty: a take is never deferred.
BUDGET = Budget("bench", rate=1e9, burst=10**9)
FIRST_STEP, LATER_STEP, TOOL = "first step", "later step", "tool take"


class RuntimeData(BaseModel):
    n: int


@dataclass(frozen=True, slots=True)
class Subject:
    key: str  # the report's row name and the event type's suffix
    does: str  # what the agent does per event, for the report
    steps: int  # durable steps it stores per event (to check the run)

    @property
    def event_type(self) -> str:
        return f"bench.runtime.{self.key}"


SUBJECTS = (
    Subject("baseline", "returns its data", 0),
    Subject("step", "one `ctx.step`", 1),
    Subject("steps3", "three `ctx.step`", 3),
    Subject("tool", "one `ctx.tool` take", 0),
    Subject("step+tool", "one `ctx.step` and one `ctx.tool` take", 1),
)
BASELINE = SUBJECTS[0].key


@dataclass(slots=True)
class Timings:
    """Milliseconds spent awaiting ``ctx.step`` / ``ctx.tool``, by kind; off while warming up."""

    on: bool = False
    ms: dict[str, list[float]] = field(default_factory=dict)

    async def time(self, kind: str, call: Awaitable[Any]) -> Any:
        started = time.perf_counter()
        value = await call
        if self.on:
            self.ms.setdefault(kind, []).append((time.perf_counter() - started) * 1000)
        return value


async def _echo(n: int) -> dict[str, int]:
    return {"n": n}


Agent = Callable[[Event[RuntimeData], AgentContext], Awaitable[dict[str, Any]]]


def _agents(timings: Timings) -> dict[str, Agent]:
    async def baseline(event: Event[RuntimeData], ctx: AgentContext) -> dict[str, Any]:
        return {"n": event.data.n}

    async def step(event: Event[RuntimeData], ctx: AgentContext) -> dict[str, Any]:
        # The first step of an event also loads its stored steps (one query, none found).
        return dict(await timings.time(FIRST_STEP, ctx.step("a", _echo, event.data.n)))

    async def steps3(event: Event[RuntimeData], ctx: AgentContext) -> dict[str, Any]:
        await timings.time(FIRST_STEP, ctx.step("a", _echo, event.data.n))
        await timings.time(LATER_STEP, ctx.step("b", _echo, event.data.n))
        return dict(await timings.time(LATER_STEP, ctx.step("c", _echo, event.data.n)))

    async def tool(event: Event[RuntimeData], ctx: AgentContext) -> dict[str, Any]:
        await timings.time(TOOL, ctx.tool(BUDGET.name))
        return {"n": event.data.n}

    async def step_tool(event: Event[RuntimeData], ctx: AgentContext) -> dict[str, Any]:
        await timings.time(TOOL, ctx.tool(BUDGET.name))
        return dict(await timings.time(FIRST_STEP, ctx.step("a", _echo, event.data.n)))

    return {
        "baseline": baseline,
        "step": step,
        "steps3": steps3,
        "tool": tool,
        "step+tool": step_tool,
    }


def registry(timings: Timings) -> Registry:
    """A private registry with one event type per subject."""
    reg = Registry()
    agents = _agents(timings)
    for subject in SUBJECTS:
        reg.register(subject.event_type, RuntimeData, agents[subject.key])
    return reg
