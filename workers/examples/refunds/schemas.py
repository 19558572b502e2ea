"""The refunds example's events: importable without LangGraph, so a worker registers the
types at start-up and imports the graph only when a refund is requested."""

from __future__ import annotations

from pydantic import BaseModel, Field

REQUESTED = "refund.requested"
# The answer an operator publishes (the console's Approve/Reject on the waiting run).
APPROVAL = "refund.approval"


class RefundRequested(BaseModel):
    # A string: a wait matches JSON values exactly, and the answer carries it back as is.
    order_id: str = Field(min_length=1, max_length=100)
    amount_cents: int = Field(gt=0)
    reason: str = Field(default="", max_length=2_000)


class RefundApproval(BaseModel):
    order_id: str = Field(min_length=1, max_length=100)
    approved: bool
    by: str = Field(default="", max_length=200)
    comment: str = Field(default="", max_length=2_000)
