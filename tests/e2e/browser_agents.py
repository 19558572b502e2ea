"""The agents of the console's action tests: one fails while a downstream service is "down",
one runs long (until cancelled).

Loaded by ``runworker`` subprocesses through ``STREAMDESK_AGENT_MODULES``. The test process
does not import it (that would add its type to the test process's default registry).
"""

from __future__ import annotations

import asyncio
import functools
import os
from typing import Any

import redis
from pydantic import BaseModel, ConfigDict

from workers.core.registry import agent
from workers.redis.connection import connect

# Set while the downstream service is down: every run of browser.flaky fails.
OUTAGE_KEY = "browser:outage"


class FlakyData(BaseModel):
    model_config = ConfigDict(extra="allow")


class DownstreamOutage(RuntimeError):
    pass


@functools.cache
def client() -> redis.Redis:
    return connect(os.environ["REDIS_URL"])  # a cluster client on a cluster


@agent("browser.flaky", schema=FlakyData)
def flaky(event: Any, ctx: Any) -> dict[str, Any]:
    """Fails during the outage, returns its data once it is over (a sync agent, in a thread)."""
    if client().exists(OUTAGE_KEY):
        raise DownstreamOutage("the downstream service is down")
    return dict(event.data.model_dump())


@agent("browser.long", schema=FlakyData)
async def long(event: Any, ctx: Any) -> None:
    """Runs for two minutes unless an operator cancels it (the cancel tests)."""
    await asyncio.sleep(120)
