"""Running a LangGraph graph as an agent's body: one thread per event, resumed on redelivery;
an ``interrupt()`` in a node waits, durably, for the event that answers it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel
from langgraph.types import Command, Interrupt

from workers.core.errors import StepError
from workers.runtime.context import AgentContext
from workers.runtime.graph.interrupts import InterruptWait, answer_all
from workers.runtime.graph.saver import DjangoSaver, Fence

AnyGraph = StateGraph[Any, Any, Any, Any] | Pregel[Any, Any, Any, Any]


@dataclass(frozen=True, slots=True)
class GraphContext:
    """What a node gets as ``runtime.context`` (declare ``runtime: Runtime[GraphContext]``):
    the agent's context, for ``step``, ``idempotency_key``, ``model``, ``tool``. A wrapper
    because LangGraph types a run's context as a dataclass, TypedDict or pydantic model."""

    agent: AgentContext


async def run_graph(
    ctx: AgentContext,
    graph: AnyGraph,
    input: Any,
    *,
    wait_for: str | InterruptWait | None = None,
    **config: Any,
) -> dict[str, Any]:
    """Run ``graph`` (a ``StateGraph`` or a compiled graph) on ``input`` with its checkpoints
    in the database under ``thread_id = ctx.event_hash``, and return its final state.

    When the event was tried before (a checkpoint exists), the graph resumes from its last
    checkpoint instead: finished nodes do not run again, and ``input`` is not used. Nodes get
    ``ctx`` as ``runtime.context.agent`` (a ``runtime: Runtime[GraphContext]`` parameter).
    ``config`` goes into the run's ``RunnableConfig`` (``recursion_limit``, ``tags``,
    ``configurable``...); ``thread_id`` is always the event hash.

    A node's ``interrupt(value)`` becomes ``ctx.wait_for_event``: the run waits holding no
    slot, and the answer resumes the graph (``Command(resume=...)``), the node's
    ``interrupt()`` returning the answer's ``data`` (None on a timeout). What to wait for:
    the value's ``wait_for``, ``match``, ``timeout_s``, else ``wait_for`` here (an event
    type, or an ``InterruptWait``). workers/runtime/graph/interrupts.py.
    """
    saver = DjangoSaver(fence=Fence(ctx.event_hash, ctx.lease))
    compiled = _with_saver(graph, saver)
    run_config = _config(ctx.event_hash, config)
    waits = InterruptWait(wait_for) if isinstance(wait_for, str) else wait_for
    next_input: Any = input
    resumed = await saver.aget_tuple(run_config)
    if resumed is not None:
        ctx.log.info(
            "graph resumes from checkpoint %s (step %s)",
            resumed.config["configurable"]["checkpoint_id"],
            resumed.metadata.get("step"),
        )
        # A graph stopped on interrupts goes straight to their waits: invoking it first
        # would run the interrupted node again only to stop at the same interrupt, and
        # its durable steps would then run twice in one attempt.
        pending = await _pending(compiled, run_config)
        next_input = Command(resume=await answer_all(ctx, pending, waits)) if pending else None
    while True:
        output = await _invoke(ctx, compiled, next_input, run_config)
        pending = await _pending(compiled, run_config)
        if not pending:
            break
        # Each answer that came resumes the graph, which may stop on another interrupt.
        next_input = Command(resume=await answer_all(ctx, pending, waits))
    if not isinstance(output, Mapping):
        raise StepError(f"the graph's output is a {type(output).__name__}, not a mapping")
    return dict(output)


async def _invoke(
    ctx: AgentContext, compiled: Pregel[Any, Any, Any, Any], input: Any, config: RunnableConfig
) -> Any:
    # "sync": a node's checkpoint is stored before the next node starts, so a crash never
    # loses a finished node (the default, "async", writes it while the next one runs).
    return await compiled.ainvoke(input, config, context=GraphContext(ctx), durability="sync")


async def _pending(
    compiled: Pregel[Any, Any, Any, Any], config: RunnableConfig
) -> tuple[Interrupt, ...]:
    # The checkpoint's, not the output's ``__interrupt__``: also right on a replay, and for
    # graphs whose output is not a mapping.
    return (await compiled.aget_state(config)).interrupts


def _with_saver(graph: AnyGraph, saver: DjangoSaver) -> Pregel[Any, Any, Any, Any]:
    if isinstance(graph, StateGraph):
        return graph.compile(checkpointer=saver)
    # A copy: the caller's compiled graph (often a module global) keeps its own checkpointer.
    return graph.copy({"checkpointer": saver})


def _config(thread_id: str, config: dict[str, Any]) -> RunnableConfig:
    configurable = {**config.get("configurable", {}), "thread_id": thread_id}
    return cast(RunnableConfig, {**config, "configurable": configurable})
