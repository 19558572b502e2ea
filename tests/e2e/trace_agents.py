"""The agent of the tracing crash test: its first delivery hangs until its worker is killed.

Loaded by ``runworker`` subprocesses through ``STREAMDESK_AGENT_MODULES``; the test process
does not import it (its ``@agent`` would otherwise land in the test process's registry).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from workers.core.registry import agent

EVENT_TYPE = "e2e.trace.crash"


class Crash(BaseModel):
    # The file this agent touches when its first delivery has started: the test's cue to
    # SIGKILL the worker while the attempt is certainly mid-agent.
    marker: str


@agent(EVENT_TYPE, schema=Crash)
async def hangs_first_time(event: Any, ctx: Any) -> str:
    if ctx.deliveries == 1:
        Path(event.data.marker).write_text(ctx.consumer)
        # Far longer than any test waits: only the SIGKILL ends this attempt.
        await asyncio.sleep(3600)
    return f"delivery {ctx.deliveries}"
