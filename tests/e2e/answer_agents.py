"""Agents of the Waiting page's browser test: an expense that waits for an operator's
decision, and a digest that sleeps an hour (types of their own: the refunds example takes
``refund.*``).

Loaded by ``runworker`` subprocesses through ``STREAMDESK_AGENT_MODULES``; the test process
does not import it (that would add its types to the test process's default registry).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from workers.core.events import Event
from workers.core.registry import agent
from workers.runtime.context import AgentContext


class Expense(BaseModel):
    expense_id: int


class Digest(BaseModel):
    name: str


@agent("expense.submitted", schema=Expense)
async def expense(event: Event[Expense], ctx: AgentContext) -> dict[str, Any]:
    answer = await ctx.wait_for_event(
        "expense.decided",
        match={"data.expense_id": event.data.expense_id},
        timeout_s=3600,
        note=f"Reimburse expense {event.data.expense_id}?",
    )
    if answer is None:
        return {"outcome": "timed out"}
    data = answer.data
    return {"approved": data["approved"], "by": data["by"], "comment": data.get("comment")}


@agent("digest.due", schema=Digest)
async def digest(event: Event[Digest], ctx: AgentContext) -> dict[str, Any]:
    await ctx.sleep(3600)
    return {"digest": event.data.name}
