"""Agents of the base-exception e2e test: one calls ``sys.exit()`` as a library might, one
raises ``KeyboardInterrupt`` from its thread, the rest return.

Loaded by ``runworker`` subprocesses through ``STREAMDESK_AGENT_MODULES``; the test process
does not import it.
"""

from __future__ import annotations

import sys
from typing import Any

from pydantic import BaseModel

from workers.core.registry import agent


class Note(BaseModel):
    n: int


@agent("e2e.exit", schema=Note)
async def exits(event: Any, ctx: Any) -> int:
    if event.data.n == 0:
        sys.exit(2)
    return int(event.data.n)


@agent("e2e.interrupt", schema=Note)
def interrupts(event: Any, ctx: Any) -> int:
    if event.data.n == 0:
        raise KeyboardInterrupt
    return int(event.data.n)
