"""Agents of the runtime's process tests: durable steps across a SIGKILL, a shared budget.

Loaded by ``runworker`` subprocesses through ``STREAMDESK_AGENT_MODULES``; the test process
does not import it (that would add its types to the test process's default registry).
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from typing import Any

import redis
import redis.asyncio as aredis
from pydantic import BaseModel

from workers.core.events import Event
from workers.core.registry import agent
from workers.runtime.context import AgentContext

# Counters the tests read: how often each step's function really ran.
FIRST_RUNS = "runtime:first"
SECOND_RUNS = "runtime:second"
# Set by the test once the first worker is dead: the second step may finish.
RELEASED = "runtime:released"
# A list of the times (s, float) the budget let a call through.
GRANTS = "runtime:grants"


class StepsData(BaseModel):
    order: str


class CallData(BaseModel):
    n: int


@functools.cache
def client() -> redis.Redis:
    return redis.Redis.from_url(os.environ["REDIS_URL"], decode_responses=True)


@agent("test.two_steps", schema=StepsData)
async def two_steps(event: Event[StepsData], ctx: AgentContext) -> dict[str, Any]:
    def charge() -> dict[str, str]:
        client().incr(FIRST_RUNS)
        return {"charge": f"ch-{event.data.order}", "key": ctx.idempotency_key("charge")}

    async def ship(charge: dict[str, str]) -> str:
        client().incr(SECOND_RUNS)
        while not client().exists(RELEASED):  # the first worker is killed in here
            await asyncio.sleep(0.05)
        return f"shipped after {charge['charge']}"

    charged = await ctx.step("charge", charge)
    shipped = await ctx.step("ship", ship, charged)
    return {"charged": charged, "shipped": shipped}


@agent("test.call_api", schema=CallData)
async def call_api(event: Event[CallData], ctx: AgentContext) -> int:
    await ctx.tool("api")
    conn = aredis.Redis.from_url(os.environ["REDIS_URL"])
    try:
        await conn.rpush(GRANTS, repr(time.time()))
    finally:
        await conn.aclose()
    return event.data.n
