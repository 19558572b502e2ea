"""The agents of the Errors page's browser test: orders that cannot be found while the
order service is "down" (one error group, whatever the order), and cards always declined
(another).

Loaded by ``runworker`` subprocesses through ``STREAMDESK_AGENT_MODULES``; the test
process does not import it (that would add its types to the test process's registry).
"""

from __future__ import annotations

import functools
import os
from typing import Any

import redis
from pydantic import BaseModel, ConfigDict

from workers.core.registry import agent
from workers.redis.connection import connect

# Set while the order service is down: every shop.order run fails.
OUTAGE_KEY = "errors:outage"


class Anything(BaseModel):
    model_config = ConfigDict(extra="allow")


@functools.cache
def client() -> redis.Redis:
    return connect(os.environ["REDIS_URL"])


def load_order(order_id: str) -> dict[str, Any]:
    if client().exists(OUTAGE_KEY):
        raise KeyError(f"order {order_id} not found")
    return {"order": order_id}


@agent("shop.order", schema=Anything)
def handle_order(event: Any, ctx: Any) -> dict[str, Any]:
    return load_order(str(event.data.model_dump()["order_id"]))


@agent("shop.pay", schema=Anything)
def handle_payment(event: Any, ctx: Any) -> None:
    card = event.data.model_dump()["card"]
    raise ValueError(f"card {card} declined at 0x{id(event):x}")
