"""Streamdesk's engine: typed events on Redis Streams and idempotent agent workers.

Public API (import from here)::

    from workers import agent, publish

    @agent("ticket.created", schema=TicketCreated)
    def triage(event, ctx): ...

    publish("ticket.created", {"ticket_id": 7}, subject="ticket/7")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workers.registry import agent, default_registry

if TYPE_CHECKING:
    from workers.producer import publish as publish

__all__ = ["agent", "default_registry", "publish"]


def __getattr__(name: str) -> Any:
    # publish() needs Django settings; import it lazily so app loading stays cheap.
    if name == "publish":
        from workers.producer import publish

        return publish
    raise AttributeError(name)
