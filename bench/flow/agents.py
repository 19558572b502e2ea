"""The agents bench.flow runs, loaded with ``STREAMDESK_AGENT_MODULES=bench.flow.agents``
(tests/e2e/test_flow_sigkill.py loads them too). The bench process never imports this module:
that would add its types to the process's default registry.

- ``flow.keyed`` and ``flow.plain``: the same probe code (it only takes the clock), one with
  ``key="subject"``, one without, so a ratio of the two is the cost of the key.
- ``flow.order``: ``key="subject"``; sleeps ``data.ms`` and records its start and end in a
  Redis list (``ORDER_KEY``), the server's order of the two RPUSHes being the real order.
- ``flow.hung``: ``key="subject", timeout_s=1, max_deliveries=3``; with ``data.hang`` it
  awaits forever, recording each attempt's start and its end (the cancellation) in
  ``HUNG_KEY``; without, it runs at once like the probe.
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from typing import Any

import redis
from pydantic import BaseModel

from bench.flow.names import (
    HUNG_KEY,
    HUNG_TIMEOUT_S,
    HUNG_TYPE,
    KEYED_TYPE,
    MAX_DELIVERIES,
    ORDER_KEY,
    ORDER_TYPE,
    PLAIN_TYPE,
)
from workers.core.events import Event
from workers.core.registry import agent
from workers.runtime.context import AgentContext


class Probe(BaseModel):
    n: int
    sent_ns: int  # time.time_ns() just before XADD
    spread: bool = False  # scenario 2: one of the spread events (not the hot key's)


class Ordered(BaseModel):
    seq: int
    ms: int


class Hung(BaseModel):
    n: int
    sent_ns: int
    hang: bool = False


@functools.cache
def _client() -> redis.Redis:
    return redis.Redis.from_url(os.environ["REDIS_URL"], decode_responses=True)


def _probe(data: Probe) -> dict[str, Any]:
    started_ns = time.time_ns()  # first: pickup latency is "XADD to handler start"
    return {"started_ns": started_ns, "sent_ns": data.sent_ns, "n": data.n, "spread": data.spread}


@agent(KEYED_TYPE, schema=Probe, key="subject", concurrency=1)
async def keyed(event: Event[Probe], ctx: AgentContext) -> dict[str, Any]:
    return _probe(event.data)


@agent(PLAIN_TYPE, schema=Probe)
async def plain(event: Event[Probe], ctx: AgentContext) -> dict[str, Any]:
    return _probe(event.data)


def _record(key: str, *fields: object) -> None:
    _client().rpush(key, " ".join(str(f) for f in fields))


@agent(ORDER_TYPE, schema=Ordered, key="subject", concurrency=1)
async def ordered(event: Event[Ordered], ctx: AgentContext) -> None:
    subject, seq, pid = event.subject, event.data.seq, os.getpid()
    _record(ORDER_KEY, "start", subject, seq, pid, time.time_ns())
    await asyncio.sleep(event.data.ms / 1000)
    _record(ORDER_KEY, "end", subject, seq, pid, time.time_ns())


@agent(
    HUNG_TYPE,
    schema=Hung,
    key="subject",
    concurrency=1,
    timeout_s=HUNG_TIMEOUT_S,
    max_deliveries=MAX_DELIVERIES,
)
async def hung(event: Event[Hung], ctx: AgentContext) -> dict[str, Any]:
    started_ns = time.time_ns()
    if not event.data.hang:
        return {"started_ns": started_ns, "sent_ns": event.data.sent_ns, "n": event.data.n}
    _record(HUNG_KEY, "start", event.data.n, started_ns)
    try:
        await asyncio.Event().wait()  # never set
    finally:  # the timeout cancels the task: record when it ended
        _record(HUNG_KEY, "end", event.data.n, time.time_ns())
    return {}
