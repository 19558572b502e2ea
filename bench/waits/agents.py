"""The agents of ``python -m bench.waits``, loaded by its runworkers with
``STREAMDESK_AGENT_MODULES=bench.engine.agents,bench.waits.agents`` (the probe is the plain
event whose pickup and drain are measured).

``bench.approval`` counts, in Redis hashes the bench reads, how often the steps before and
after its wait really ran for each ``n``: a replay must not run them again.
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from typing import Any

import redis
from pydantic import BaseModel

from workers.core.events import Event
from workers.core.registry import agent
from workers.runtime.context import AgentContext

APPROVAL = "bench.approval"
APPROVE = "bench.approve"  # the answer: no agent takes it
NAP = "bench.nap"
HOLD = "bench.hold"
PARK = "bench.park"
NEVER = "bench.never"  # what a parked run waits for: nobody publishes it
BEFORE = "bench:waits:before"  # hash: n -> runs of the step before the wait
AFTER = "bench:waits:after"  # hash: n -> runs of the step after it
APPROVAL_TIMEOUT_S = 3600.0
PARK_TIMEOUT_S = 86_400.0


class Numbered(BaseModel):
    n: int


class Nap(BaseModel):
    n: int
    seconds: float


@functools.cache
def client() -> redis.Redis:
    return redis.Redis.from_url(os.environ["REDIS_URL"], decode_responses=True)


@agent(APPROVAL, schema=Numbered)
async def approval(event: Event[Numbered], ctx: AgentContext) -> dict[str, Any]:
    n = event.data.n
    await ctx.step("before", lambda: client().hincrby(BEFORE, str(n), 1))
    answer = await ctx.wait_for_event(APPROVE, match={"data.n": n}, timeout_s=APPROVAL_TIMEOUT_S)
    await ctx.step("after", lambda: client().hincrby(AFTER, str(n), 1))
    return {"n": n, "approved": answer is not None}


@agent(NAP, schema=Nap)
async def nap(event: Event[Nap], ctx: AgentContext) -> dict[str, float]:
    """A durable sleep: the run gives back its slot."""
    began = await ctx.step("began", time.time)
    await ctx.sleep(event.data.seconds)
    return {"began": began, "ended": time.time()}


@agent(HOLD, schema=Nap)
async def hold(event: Event[Nap], ctx: AgentContext) -> dict[str, float]:
    """The baseline: a sleep that holds its slot all along."""
    began = time.time()
    await asyncio.sleep(event.data.seconds)
    return {"began": began, "ended": time.time()}


@agent(PARK, schema=Numbered)
async def park(event: Event[Numbered], ctx: AgentContext) -> dict[str, Any]:
    """A wait of its own (a distinct match) with a day's timeout: a wait and a timer."""
    answer = await ctx.wait_for_event(
        NEVER, match={"data.n": event.data.n}, timeout_s=PARK_TIMEOUT_S
    )
    return {"n": event.data.n, "answered": answer is not None}
