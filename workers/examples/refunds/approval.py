"""The ``refund.requested`` agent: a LangGraph graph that asks a person before a large refund.

check -> refund, or check -> ask -> refund | decline. ``ask`` calls ``interrupt()``: the run
waits, holding no slot, for a ``refund.approval`` event about the same order (the console's
Approve/Reject button publishes it), for at most a day. The answer resumes the graph at
``ask``; ``check`` does not run again. The refund itself is a durable step that passes its
idempotency key to the payment service: it happens once however often the run is replayed.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from workers.core.events import Event
from workers.examples.refunds.schemas import APPROVAL, RefundRequested
from workers.examples.sandbox import services
from workers.runtime.context import AgentContext
from workers.runtime.graph import GraphContext, run_graph

# Above this a person decides; at or below it the agent refunds on its own.
APPROVAL_ABOVE_CENTS = 50_00
# How long an approval may take; without an answer by then nothing is refunded.
APPROVAL_TIMEOUT_S = 24 * 3600


class RefundState(TypedDict, total=False):
    request: dict[str, Any]  # the event's data
    needs_approval: bool
    # {"approved": bool, "by": str, "comment": str}; "timed_out": True when nobody answered.
    approval: dict[str, Any]
    refund: dict[str, Any]
    outcome: str


def check(state: RefundState) -> RefundState:
    return {"needs_approval": state["request"]["amount_cents"] > APPROVAL_ABOVE_CENTS}


def route_check(state: RefundState) -> Literal["ask", "refund"]:
    return "ask" if state["needs_approval"] else "refund"


def ask(state: RefundState) -> RefundState:
    """Wait for an operator. Runs again from its start when the answer comes, so it does
    nothing before ``interrupt()`` that may not happen twice."""
    request = state["request"]
    answer = interrupt(
        {
            "wait_for": APPROVAL,
            "match": {"data.order_id": request["order_id"]},
            "timeout_s": APPROVAL_TIMEOUT_S,
            "question": (
                f"Refund {_money(request['amount_cents'])} on order {request['order_id']}?"
                + (f" Reason: {request['reason']}" if request.get("reason") else "")
            ),
        }
    )
    if answer is None:  # the wait timed out
        return {"approval": {"approved": False, "timed_out": True}}
    return {
        "approval": {
            "approved": answer.get("approved") is True,
            "by": str(answer.get("by", "")),
            "comment": str(answer.get("comment", "")),
        }
    }


def route_answer(state: RefundState) -> Literal["refund", "decline"]:
    return "refund" if state["approval"]["approved"] else "decline"


async def refund(state: RefundState, runtime: Runtime[GraphContext]) -> RefundState:
    ctx = runtime.context.agent
    request = state["request"]
    done = await ctx.step(
        "refund",
        services.refund,
        request["order_id"],
        request["amount_cents"],
        ctx.idempotency_key("refund"),
    )
    approval = state.get("approval")
    by = f" (approved by {approval['by']})" if approval and approval.get("by") else ""
    amount = _money(request["amount_cents"])
    return {"refund": done, "outcome": f"refunded {amount} on order {request['order_id']}{by}"}


def decline(state: RefundState) -> RefundState:
    approval, order = state["approval"], state["request"]["order_id"]
    if approval.get("timed_out"):
        hours = APPROVAL_TIMEOUT_S // 3600
        return {"outcome": f"not refunded: no answer on order {order} within {hours} h"}
    comment = f": {approval['comment']}" if approval.get("comment") else ""
    return {"outcome": f"not refunded: {approval.get('by') or 'an operator'} rejected{comment}"}


def _money(cents: int) -> str:
    return f"{cents // 100}.{cents % 100:02d}"


def build() -> StateGraph[RefundState, GraphContext, RefundState, RefundState]:
    graph = StateGraph(RefundState, context_schema=GraphContext)
    graph.add_node("check", check)
    graph.add_node("ask", ask)
    graph.add_node("refund", refund)
    graph.add_node("decline", decline)
    graph.add_edge(START, "check")
    graph.add_conditional_edges("check", route_check)
    graph.add_conditional_edges("ask", route_answer)
    graph.add_edge("refund", END)
    graph.add_edge("decline", END)
    return graph


GRAPH = build().compile()


async def handle(event: Event[RefundRequested], ctx: AgentContext) -> dict[str, Any]:
    state = await run_graph(ctx, GRAPH, {"request": event.data.model_dump()})
    keys = ("approval", "refund", "outcome")
    return {"order_id": event.data.order_id, **{k: state[k] for k in keys if k in state}}
