"""The agents bench.fanout runs, loaded with ``STREAMDESK_AGENT_MODULES=bench.fanout.agents``
(the bench process itself never imports this module: its registry stays empty).

Two named agents on one type, each in a consumer group of its own: ``a`` takes the clock
and returns (the engine's work alone, as the probe of ``make bench``); ``b`` does the same
but fails for good on every 10th event (``max_deliveries=1``: dead-lettered at once).
"""

from __future__ import annotations

from typing import Any

from bench.fanout.probe import TYPE, Ticket, probe
from workers.core.events import Event
from workers.core.registry import agent
from workers.runtime.context import AgentContext


@agent(TYPE, schema=Ticket, name="a")
async def a(event: Event[Ticket], ctx: AgentContext) -> dict[str, Any]:
    return probe(event)


@agent(TYPE, schema=Ticket, name="b", max_deliveries=1)
async def b(event: Event[Ticket], ctx: AgentContext) -> dict[str, Any]:
    result = probe(event)
    if event.data.n % 10 == 0:
        raise RuntimeError(f"b fails on every 10th event ({event.data.n})")
    return result
