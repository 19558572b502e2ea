"""A sync agent with ``timeout_s=1`` whose first run sleeps 4 s in its thread (issue 29):
each run writes ``start end`` (wall-clock seconds) to a Redis list when it returns, and
counts the runs going on at once, keeping the most it saw.

Loaded by ``runworker`` subprocesses through ``STREAMDESK_AGENT_MODULES``; the test process
does not import it (that would add its types to the test process's default registry).
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any

import redis
from pydantic import BaseModel, ConfigDict

SPANS_KEY = "timeout:spans"
RUNNING_KEY = "timeout:running"
MOST_KEY = "timeout:most"
FIRST_RUN_S = 4.0


class AnyData(BaseModel):
    model_config = ConfigDict(extra="allow")


@functools.cache
def client() -> redis.Redis:
    return redis.Redis.from_url(os.environ["REDIS_URL"], decode_responses=True)


def register() -> None:
    from workers.core.registry import agent

    @agent("timeout.sync", schema=AnyData, timeout_s=1)
    def sleep_past_the_timeout(event: Any, ctx: Any) -> str:
        r = client()
        started = time.time()
        running = int(r.incr(RUNNING_KEY))
        if running > int(r.get(MOST_KEY) or 0):
            r.set(MOST_KEY, running)
        try:
            if r.llen(SPANS_KEY) == 0:
                time.sleep(FIRST_RUN_S)
        finally:
            r.decr(RUNNING_KEY)
            r.rpush(SPANS_KEY, f"{started} {time.time()}")
        return "ran"


register()
