"""What an ``interrupt()`` waits for (workers/runtime/graph/interrupts.py), and the refunds
example's graph on LangGraph's in-memory saver: its question, and a timed-out approval."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langgraph", reason="the optional langgraph extra is not installed")

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, Interrupt

from workers.core.errors import StepError
from workers.core.events import Envelope
from workers.runtime.graph import InterruptWait
from workers.runtime.graph.interrupts import ResolvedWait, resolve

EVENT = Envelope(type="refund.requested", subject="order/7", data={"order_id": "7"})


def interrupt(value: Any, id: str = "a" * 32) -> Interrupt:
    return Interrupt(value=value, id=id)


def test_resolve_takes_everything_from_the_interrupts_value() -> None:
    value = {"wait_for": "x.answer", "match": {"data.id": 1}, "timeout_s": 60, "question": "?"}
    wait = resolve(interrupt(value), InterruptWait("other", {"subject": "s"}, 5), EVENT)
    assert wait == ResolvedWait("x.answer", {"data.id": 1}, 60, f"interrupt:{'a' * 32}", "?")


def test_resolve_falls_back_on_run_graphs_defaults() -> None:
    default = InterruptWait("x.answer", lambda e: {"subject": e.subject}, timeout_s=30)
    wait = resolve(interrupt("approve?"), default, EVENT)
    assert (wait.event_type, wait.match, wait.timeout_s) == ("x.answer", {"subject": "order/7"}, 30)
    assert wait.note == "approve?"  # a string interrupt is the question itself


def test_resolve_lets_the_value_say_no_timeout() -> None:
    wait = resolve(interrupt({"timeout_s": None}), InterruptWait("x", timeout_s=30), EVENT)
    assert (wait.event_type, wait.timeout_s, wait.match) == ("x", None, {})


def test_resolve_refuses_an_interrupt_nothing_answers() -> None:
    with pytest.raises(StepError, match="nothing says what answers it"):
        resolve(interrupt({"question": "?"}), None, EVENT)


def test_resolve_refuses_a_match_that_is_not_a_dict() -> None:
    with pytest.raises(StepError, match="match must be a dict"):
        resolve(interrupt({"wait_for": "x", "match": ["data.id"]}), None, EVENT)


def test_refund_graph_asks_above_the_threshold_and_declines_when_nobody_answers() -> None:
    from workers.examples.refunds import approval

    graph = approval.build().compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    request = {"order_id": "9", "amount_cents": approval.APPROVAL_ABOVE_CENTS + 1, "reason": ""}
    out = graph.invoke({"request": request}, config)
    [asked] = out["__interrupt__"]
    assert asked.value["wait_for"] == "refund.approval"
    assert asked.value["match"] == {"data.order_id": "9"}
    assert asked.value["timeout_s"] == 24 * 3600
    assert asked.value["question"] == "Refund 50.01 on order 9?"
    # What run_graph resumes a timed-out wait with: None, through the resume map.
    done = graph.invoke(Command(resume={asked.id: None}), config)
    assert done["approval"] == {"approved": False, "timed_out": True}
    assert done["outcome"] == "not refunded: no answer on order 9 within 24 h"
    assert "refund" not in done
