"""Streamdesk's engine: typed events on Redis Streams and idempotent agent workers.

Public API (import from here)::

    from workers import AgentContext, agent, publish, rate_limited

    @agent("ticket.created", schema=TicketCreated)
    async def triage(event, ctx: AgentContext): ...

    publish("ticket.created", {"ticket_id": 7}, subject="ticket/7")

Model calls: ``workers.llm.loop.run_tools``; LangGraph: ``workers.graph`` (docs/agents.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workers.registry import agent, default_registry

if TYPE_CHECKING:
    from workers.context import AgentContext as AgentContext
    from workers.context import SyncAgentContext as SyncAgentContext
    from workers.context import rate_limited as rate_limited
    from workers.producer import publish as publish

__all__ = [
    "AgentContext",
    "SyncAgentContext",
    "agent",
    "default_registry",
    "publish",
    "rate_limited",
]
_LAZY = {
    "publish": "workers.producer",
    "AgentContext": "workers.context",
    "SyncAgentContext": "workers.context",
    "rate_limited": "workers.context",
}


def __getattr__(name: str) -> Any:
    # publish() needs Django settings; import lazily so app loading stays cheap.
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(name)
