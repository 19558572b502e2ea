"""Agents that never return the first time they run (issue 26, item 5): a sync one whose
thread waits forever, and an async one that waits forever in ``asyncio.to_thread``. Each
counts its starts in Redis; from the second start on it returns at once.

Loaded by ``runworker`` subprocesses through ``STREAMDESK_AGENT_MODULES``; the test process
does not import it (that would add its types to the test process's default registry).
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from typing import Any

import redis
from pydantic import BaseModel, ConfigDict

# A hash: event hash -> how many times an agent started on it.
STARTS_KEY = "hung:starts"


class AnyData(BaseModel):
    model_config = ConfigDict(extra="allow")


@functools.cache
def client() -> redis.Redis:
    return redis.Redis.from_url(os.environ["REDIS_URL"], decode_responses=True)


def first_start(event: Any) -> bool:
    return int(client().hincrby(STARTS_KEY, event.hash, 1)) == 1


def register() -> None:
    from workers.core.registry import agent

    @agent("hung.sync", schema=AnyData)
    def hang_in_its_thread(event: Any, ctx: Any) -> str:
        if first_start(event):
            threading.Event().wait()  # never set: the thread never returns
        return "ran"

    @agent("hung.to_thread", schema=AnyData)
    async def hang_in_a_helper_thread(event: Any, ctx: Any) -> str:
        if first_start(event):
            await asyncio.to_thread(threading.Event().wait)
        return "ran"


register()
