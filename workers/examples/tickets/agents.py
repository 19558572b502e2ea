"""The tickets' agents: routing new tickets (a tool-calling loop) and following up on moves.

``route`` asks the model to pick a queue and a priority and to call ``route_ticket``, which
writes them on the ticket row. With no LLM configured the built-in model follows
``routing_rules`` (keywords), so the demo runs offline.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from workers.core.events import Event
from workers.core.registry import agent
from workers.runtime.context import AgentContext
from workers.runtime.llm.loop import run_tools
from workers.runtime.llm.models import Message, ToolSchema, call_tool, reply

Queue = Literal["on-call", "billing", "accounts", "product", "support"]
Priority = Literal["urgent", "normal", "low"]

SYSTEM = (
    "You route support tickets. Pick a queue (on-call for outages and security, billing, "
    "accounts, product for feature requests, support otherwise) and a priority (urgent, "
    "normal, low), call route_ticket once, then answer with one line."
)
# Words in a title that make a new ticket urgent, and the built-in model's queues.
URGENT_WORDS = ("down", "outage", "urgent", "security", "breach")
QUEUE_WORDS: tuple[tuple[Queue, tuple[str, ...]], ...] = (
    ("billing", ("invoice", "refund", "vat", "charge", "payment")),
    ("accounts", ("password", "login", "sign in", "2fa")),
    ("product", ("feature request", "would like", "dark mode")),
)


class TicketCreated(BaseModel):
    ticket_id: int
    title: str
    status: str


class TicketStatusChanged(BaseModel):
    ticket_id: int
    old: str
    new: str


def priority_of(title: str) -> Priority:
    words = title.lower()
    if any(word in words for word in URGENT_WORDS):
        return "urgent"
    return "low" if "feature request" in words else "normal"


def queue_of(title: str) -> Queue:
    words = title.lower()
    if priority_of(title) == "urgent":
        return "on-call"
    return next((q for q, keys in QUEUE_WORDS if any(k in words for k in keys)), "support")


def routing_rules(messages: list[Message], tools: list[ToolSchema]) -> Message:
    if any(m.get("role") == "tool" for m in messages):
        return reply("Routed.")
    title = str(messages[-1]["content"]).splitlines()[0]
    return call_tool("route_ticket", queue=queue_of(title), priority=priority_of(title))


def _set_route(ticket_id: int, queue: str, priority: str) -> dict[str, Any]:
    from django.db import close_old_connections

    from workers.examples.tickets.models import Ticket

    try:
        # update(), not save(): routing is not a change the outbox publishes.
        found = Ticket.objects.filter(pk=ticket_id).update(queue=queue, priority=priority)
    finally:
        close_old_connections()
    return {"ticket_id": ticket_id, "queue": queue, "priority": priority, "found": bool(found)}


@agent("ticket.created", schema=TicketCreated)
async def route(event: Event[TicketCreated], ctx: AgentContext) -> dict[str, Any]:
    """Sets a queue and a priority on a new ticket from its title and customer."""
    ticket = event.data
    customer = event.context.get("customer", "unknown")

    def route_ticket(queue: Queue, priority: Priority) -> dict[str, Any]:
        """Put the ticket in a queue with a priority."""
        return _set_route(ticket.ticket_id, queue, priority)

    result = await run_tools(
        ctx,
        ctx.model(rules=routing_rules),
        [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"{ticket.title}\n\nfrom customer {customer}"},
        ],
        [route_ticket],
        name="route",
    )
    routed = [c.result for c in result.tool_calls if c.name == "route_ticket" and not c.error]
    if not routed:
        raise RuntimeError(f"the model did not route ticket {ticket.ticket_id}: {result.text!r}")
    return {k: routed[-1][k] for k in ("ticket_id", "priority", "queue")}


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
