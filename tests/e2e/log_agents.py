"""Agents of the JSON log test: each logs through its own logger, as agent code does.

Loaded by ``runworker`` subprocesses through ``STREAMDESK_AGENT_MODULES``; the test process
does not import it.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel

from workers.core.registry import agent

log = logging.getLogger("tests.e2e.log_agents")


class Note(BaseModel):
    n: int


@agent("e2e.logs.async", schema=Note)
async def logs_async(event: Any, ctx: Any) -> None:
    log.info("async agent on %d", event.data.n)
    await ctx.step("note", lambda: log.info("step thread on %d", event.data.n))


@agent("e2e.logs.sync", schema=Note)
def logs_sync(event: Any, ctx: Any) -> None:
    log.warning("sync agent on %d", event.data.n)


@agent("e2e.logs.fail", schema=Note)
async def logs_fail(event: Any, ctx: Any) -> None:
    raise RuntimeError(f"always fails on {event.data.n}")
