"""The probe agent the benchmark runs, loaded with ``STREAMDESK_AGENT_MODULES=bench.engine.agents``.

It does no work of its own, so a benchmark of it measures the engine: read, gate,
database record, XACK. The naive baseline calls ``probe_result`` too, so both do the
same "work" per event.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel

from workers.core.events import Event
from workers.core.registry import agent
from workers.runtime.context import AgentContext

PROBE_TYPE = "bench.probe"


class ProbeData(BaseModel):
    n: int
    # time.time_ns() taken by the publisher just before XADD (or INSERT).
    sent_ns: int


def probe_result(data: ProbeData, started_ns: int) -> dict[str, Any]:
    """What every worker in the benchmark records per event: enough to compute latency."""
    return {"started_ns": started_ns, "sent_ns": data.sent_ns, "n": data.n}


@agent(PROBE_TYPE, schema=ProbeData)
async def probe(event: Event[ProbeData], ctx: AgentContext) -> dict[str, Any]:
    # Take the clock first: pickup latency is "XADD to handler start".
    started_ns = time.time_ns()
    return probe_result(event.data, started_ns)
