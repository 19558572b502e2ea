"""Registers the ``refund.requested`` agent when LangGraph is installed (without the extra
this app registers nothing, like ``workers/examples/deploys``), and ``refund.approval`` as a
type the console may publish: it has no agent of its own, it answers a waiting refund.

LangGraph takes about a second to import: the graph module is imported when the first
refund is requested, not when a worker starts.
"""

from __future__ import annotations

from importlib.util import find_spec
from typing import Any

from workers.core.events import Event
from workers.core.registry import default_registry
from workers.examples.refunds.schemas import APPROVAL, REQUESTED, RefundApproval, RefundRequested
from workers.runtime.context import AgentContext


async def refund(event: Event[RefundRequested], ctx: AgentContext) -> dict[str, Any]:
    """Refund an order; above the threshold, only once an operator approved it."""
    from workers.examples.refunds import approval

    return await approval.handle(event, ctx)


if find_spec("langgraph") is not None:
    default_registry.register(REQUESTED, RefundRequested, refund)
    default_registry.register_schema(APPROVAL, RefundApproval)
