"""Agent ``a`` of bench.fanout alone (``STREAMDESK_AGENT_MODULES=bench.fanout.agents_alone``):
the deployment without ``b``, the baseline of "pausing ``b`` does not slow ``a``"."""

from __future__ import annotations

from typing import Any

from bench.fanout.probe import TYPE, Ticket, probe
from workers.core.events import Event
from workers.core.registry import agent
from workers.runtime.context import AgentContext

__all__ = ["a"]


@agent(TYPE, schema=Ticket, name="a")
async def a(event: Event[Ticket], ctx: AgentContext) -> dict[str, Any]:
    return probe(event)
