"""Agents of the waits' process tests (issue 30): a run that asks for an answer, one that
sleeps, a sync one that sleeps, and a reply type that has its own agent.

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
from workers.runtime.context import AgentContext, SyncAgentContext

# Hashes the tests read: how often each step's function really ran, per order.
PREPARED = "waits:prepared"
FINISHED = "waits:finished"
REPLIES = "waits:replies"


class Ask(BaseModel):
    order: str
    timeout_s: float | None = None


class Nap(BaseModel):
    n: int
    seconds: float


class Reply(BaseModel):
    order: str
    approved: bool = True


@functools.cache
def client() -> redis.Redis:
    return redis.Redis.from_url(os.environ["REDIS_URL"], decode_responses=True)


@agent("test.ask", schema=Ask)
async def ask(event: Event[Ask], ctx: AgentContext) -> dict[str, Any]:
    order = event.data.order
    await ctx.step("prepare", lambda: client().hincrby(PREPARED, order, 1))
    answer = await ctx.wait_for_event(
        "test.answer", match={"data.order": order}, timeout_s=event.data.timeout_s
    )
    await ctx.step("finish", lambda: client().hincrby(FINISHED, order, 1))
    if answer is None:
        return {"order": order, "outcome": "timed out"}
    return {"order": order, "outcome": "answered", "approved": answer.data.get("approved")}


@agent("test.ask_reply", schema=Ask)
async def ask_reply(event: Event[Ask], ctx: AgentContext) -> dict[str, Any]:
    """Waits for an event that has an agent of its own (``test.reply``), by subject."""
    answer = await ctx.wait_for_event("test.reply", match={"subject": event.data.order})
    return {"reply": None if answer is None else answer.id}


@agent("test.reply", schema=Reply)
def reply(event: Event[Reply], ctx: SyncAgentContext) -> str:
    client().hincrby(REPLIES, event.data.order, 1)
    return "replied"


@agent("test.nap", schema=Nap)
async def nap(event: Event[Nap], ctx: AgentContext) -> dict[str, float]:
    before = await ctx.step("before", time.time)
    await ctx.sleep(event.data.seconds)
    return {"before": before, "after": time.time()}


@agent("test.nap_sync", schema=Nap)
def nap_sync(event: Event[Nap], ctx: SyncAgentContext) -> dict[str, float]:
    before = ctx.step("before", time.time)
    ctx.sleep(event.data.seconds)
    return {"before": before, "after": time.time()}
