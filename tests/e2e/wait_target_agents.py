"""Agents of issue 30's targets as tests (tests/e2e/test_waits_targets.py): a run that waits
for its approval between two steps, a plain one, and one that sleeps.

Loaded by ``runworker`` subprocesses through ``STREAMDESK_AGENT_MODULES``; the test process
does not import it (that would add its types to the test process's default registry).
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any

import redis
from pydantic import BaseModel

from workers.core.events import Event
from workers.core.registry import agent
from workers.runtime.context import AgentContext

# Hashes the tests read: n -> how often the step before / after the wait really ran.
BEFORE = "targets:before"
AFTER = "targets:after"
# Long enough that no wait of a test times out: only an answer ends it.
APPROVAL_TIMEOUT_S = 600


class Numbered(BaseModel):
    n: int


class Nap(BaseModel):
    n: int
    seconds: float


@functools.cache
def client() -> redis.Redis:
    return redis.Redis.from_url(os.environ["REDIS_URL"], decode_responses=True)


@agent("target.approval", schema=Numbered)
async def approval(event: Event[Numbered], ctx: AgentContext) -> dict[str, Any]:
    n = event.data.n
    await ctx.step("before", lambda: client().hincrby(BEFORE, str(n), 1))
    answer = await ctx.wait_for_event(
        "target.approve", match={"data.n": n}, timeout_s=APPROVAL_TIMEOUT_S
    )
    await ctx.step("after", lambda: client().hincrby(AFTER, str(n), 1))
    return {"n": n, "approved": answer is not None}


@agent("target.plain", schema=Numbered)
async def plain(event: Event[Numbered], ctx: AgentContext) -> dict[str, float]:
    return {"started": time.time()}


@agent("target.nap", schema=Nap)
async def nap(event: Event[Nap], ctx: AgentContext) -> dict[str, float]:
    began = await ctx.step("began", time.time)
    await ctx.sleep(event.data.seconds)
    return {"began": began, "ended": time.time()}
