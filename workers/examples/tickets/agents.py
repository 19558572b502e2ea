"""The triage agent: deterministic rules standing in for an LLM call."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from workers.context import AgentContext
from workers.events import Event
from workers.registry import agent

# Words in a title that make a new ticket urgent.
URGENT_WORDS = ("down", "outage", "urgent", "security", "breach")


class TicketCreated(BaseModel):
    ticket_id: int
    title: str
    status: str


class TicketStatusChanged(BaseModel):
    ticket_id: int
    old: str
    new: str


def priority_of(title: str) -> str:
    words = title.lower()
    return "urgent" if any(word in words for word in URGENT_WORDS) else "normal"


@agent("ticket.created", schema=TicketCreated)
async def triage(event: Event[TicketCreated], ctx: AgentContext) -> dict[str, Any]:
    """Sets a priority and a queue from the title and the customer in the context."""
    priority = priority_of(event.data.title)
    queue = "on-call" if priority == "urgent" else "support"
    return {"ticket_id": event.data.ticket_id, "priority": priority, "queue": queue}


@agent("ticket.status_changed", schema=TicketStatusChanged)
async def follow_up(event: Event[TicketStatusChanged], ctx: AgentContext) -> dict[str, Any]:
    """Decides what to tell the customer when a ticket moves."""
    if event.data.new == "closed":
        action = "ask-for-feedback"
    elif event.data.old == "closed":
        action = "apologise-reopened"
    else:
        action = "none"
    return {"ticket_id": event.data.ticket_id, "action": action}
