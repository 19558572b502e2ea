"""Streamdesk's engine: typed events on Redis Streams and idempotent agent workers.

Public API (import from here)::

    from workers import AgentContext, NonRetriable, Retry, agent, publish, rate_limited, schedule

    @agent("ticket.created", schema=TicketCreated, timeout_s=120, retry=Retry(base_s=2))
    async def triage(event, ctx: AgentContext): ...

    publish("ticket.created", {"ticket_id": 7}, subject="ticket/7")
    publish("ticket.follow_up", {"ticket_id": 7}, delay_s=600)  # held, then once

    schedule("0 9 * * MON-FRI", type="report.due", data={"kind": "daily"})  # UTC

Model calls: ``workers.runtime.llm.loop.run_tools``; LangGraph: ``workers.runtime.graph``
(docs/agents.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workers.core.errors import AgentTimeout, NonRetriable, RetryAfter
from workers.core.registry import agent, default_registry
from workers.core.retry import Retry

if TYPE_CHECKING:
    from workers.producers.publish import publish as publish
    from workers.runtime.context import AgentContext as AgentContext
    from workers.runtime.context import SyncAgentContext as SyncAgentContext
    from workers.runtime.context import rate_limited as rate_limited
    from workers.timers.schedules import schedule as schedule

__all__ = [
    "AgentContext",
    "AgentTimeout",
    "NonRetriable",
    "Retry",
    "RetryAfter",
    "SyncAgentContext",
    "agent",
    "default_registry",
    "publish",
    "rate_limited",
    "schedule",
]
_LAZY = {
    "publish": "workers.producers.publish",
    "AgentContext": "workers.runtime.context",
    "SyncAgentContext": "workers.runtime.context",
    "rate_limited": "workers.runtime.context",
    "schedule": "workers.timers.schedules",
}


def __getattr__(name: str) -> Any:
    # publish() needs Django settings; import lazily so app loading stays cheap.
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(name)
