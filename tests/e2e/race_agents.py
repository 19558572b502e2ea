"""The agent of the action races: it records every start of an event in Redis.

Loaded by ``runworker`` subprocesses through ``STREAMDESK_AGENT_MODULES``. The test process
does not import it (that would add its type to the test process's default registry).
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any

import redis
from pydantic import BaseModel, Field

from workers.core.registry import agent

# A hash: event hash -> how many times an agent started on it.
STARTS_KEY = "race:starts"


class WorkData(BaseModel):
    ms: int = Field(ge=0, le=10_000)


@functools.cache
def client() -> redis.Redis:
    return redis.Redis.from_url(os.environ["REDIS_URL"], decode_responses=True)


@agent("race.work", schema=WorkData)
def work(event: Any, ctx: Any) -> None:
    """Counts its start, then works ``ms`` milliseconds (in a thread: a sync agent)."""
    client().hincrby(STARTS_KEY, event.hash, 1)
    time.sleep(event.data.ms / 1000)
