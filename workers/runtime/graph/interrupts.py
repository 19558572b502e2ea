"""A graph's ``interrupt()`` as a durable wait (docs/langgraph.md, "Human in the loop").

A node's ``interrupt(value)`` stops the graph with a pending interrupt. ``run_graph`` turns
each pending interrupt into ``ctx.wait_for_event``: the run gives back its slot, and when an
answer (or the timeout) comes, the graph is resumed with ``Command(resume={id: answer})``.
What to wait for comes from the interrupt's value (``{"wait_for": type, "match": {...},
"timeout_s": s}``), else from ``run_graph(..., wait_for=...)``. The node's ``interrupt()``
returns the answer event's ``data``, or None when the wait timed out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.types import Interrupt

from workers.core.errors import StepError
from workers.core.events import Envelope
from workers.runtime.context import AgentContext

# What a node may put in its interrupt's value to say what answers it.
WAIT_FOR, MATCH, TIMEOUT_S = "wait_for", "match", "timeout_s"

Match = Mapping[str, Any] | Callable[[Envelope], Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class InterruptWait:
    """What answers a graph's interrupts when the interrupt's value does not say:
    ``run_graph(ctx, graph, input, wait_for=InterruptWait("refund.approval", ...))``.

    ``match`` is a match (``{"data.order_id": 42}``) or a function of the run's event that
    builds one (``lambda event: {"subject": event.subject}``); ``timeout_s`` None: no timeout.
    """

    event_type: str | None = None
    match: Match | None = None
    timeout_s: float | None = None


@dataclass(frozen=True, slots=True)
class ResolvedWait:
    """One interrupt's wait, every field known: what ``ctx.wait_for_event`` is called with."""

    event_type: str
    match: dict[str, Any]
    timeout_s: float | None
    step: str
    # The interrupt's "question", for the person who answers it (the console shows it).
    note: str = ""


def step_name(interrupt_id: str) -> str:
    # LangGraph's interrupt id hashes the task's checkpoint namespace and the interrupt's
    # index in its node: stored with the checkpoint, it is the same on every replay, and
    # differs between two interrupts of one node and between parallel branches.
    return f"interrupt:{interrupt_id}"


def resolve(
    interrupt: Interrupt, default: InterruptWait | None, event: Envelope | None
) -> ResolvedWait:
    """The wait of ``interrupt``: its value's keys win over ``default``'s fields."""
    value = interrupt.value if isinstance(interrupt.value, Mapping) else {}
    fallback = default or InterruptWait()
    event_type = value.get(WAIT_FOR, fallback.event_type)
    if not isinstance(event_type, str) or not event_type:
        raise StepError(
            f"the graph stopped on interrupt({interrupt.value!r}) and nothing says what "
            f"answers it: put {WAIT_FOR!r} in the interrupt's value, or give run_graph "
            "wait_for=<event type>"
        )
    match = value.get(MATCH, fallback.match)
    if callable(match):
        if event is None:
            raise StepError("wait_for's match is built from the event, and this run has none")
        match = match(event)
    if match is not None and not isinstance(match, Mapping):
        raise StepError(f"interrupt {interrupt.id}: match must be a dict, got {match!r}")
    timeout_s = value.get(TIMEOUT_S, fallback.timeout_s)
    # The question asked: the value's "question", or the value itself when it is a string.
    question = value.get("question", interrupt.value)
    note = question if isinstance(question, str) else ""
    return ResolvedWait(event_type, dict(match or {}), timeout_s, step_name(interrupt.id), note)


async def answer_all(
    ctx: AgentContext,
    interrupts: Sequence[Interrupt],
    default: InterruptWait | None,
) -> dict[str, Any]:
    """Wait for each interrupt's answer in turn; the resume map ``{interrupt id: answer}``.

    The first wait not yet answered raises ``Suspended`` (the run gives back its slot); on
    the replay the answered ones return their stored outcome at once and the next one waits.
    """
    answers: dict[str, Any] = {}
    for interrupt in interrupts:
        wait = resolve(interrupt, default, ctx.envelope)
        event = await ctx.wait_for_event(
            wait.event_type, wait.match, wait.timeout_s, name=wait.step, note=wait.note or None
        )
        # None on a timeout: a resume map carries it to the node (a bare Command(resume=None)
        # would mean "no resume" to LangGraph, and the node would interrupt again).
        answers[interrupt.id] = None if event is None else event.data
        if event is None:
            ctx.log.info("interrupt %s timed out: the node gets None", interrupt.id)
    return answers
