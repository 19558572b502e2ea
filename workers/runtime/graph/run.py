"""Running a LangGraph graph as an agent's body: one thread per event, resumed on redelivery."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel

from workers.core.errors import StepError
from workers.runtime.context import AgentContext
from workers.runtime.graph.saver import DjangoSaver, Fence

AnyGraph = StateGraph[Any, Any, Any, Any] | Pregel[Any, Any, Any, Any]


@dataclass(frozen=True, slots=True)
class GraphContext:
    """What a node gets as ``runtime.context`` (declare ``runtime: Runtime[GraphContext]``):
    the agent's context, for ``step``, ``idempotency_key``, ``model``, ``tool``. A wrapper
    because LangGraph types a run's context as a dataclass, TypedDict or pydantic model."""

    agent: AgentContext


async def run_graph(
    ctx: AgentContext, graph: AnyGraph, input: Any, **config: Any
) -> dict[str, Any]:
    """Run ``graph`` (a ``StateGraph`` or a compiled graph) on ``input`` with its checkpoints
    in the database under ``thread_id = ctx.event_hash``, and return its final state.

    When the event was tried before (a checkpoint exists), the graph resumes from its last
    checkpoint instead: finished nodes do not run again, and ``input`` is not used. Nodes get
    ``ctx`` as ``runtime.context.agent`` (a ``runtime: Runtime[GraphContext]`` parameter).
    ``config`` goes into the run's ``RunnableConfig`` (``recursion_limit``, ``tags``,
    ``configurable``...); ``thread_id`` is always the event hash.
    """
    saver = DjangoSaver(fence=Fence(ctx.event_hash, ctx.lease))
    compiled = _with_saver(graph, saver)
    run_config = _config(ctx.event_hash, config)
    resumed = await saver.aget_tuple(run_config)
    if resumed is not None:
        ctx.log.info(
            "graph resumes from checkpoint %s (step %s)",
            resumed.config["configurable"]["checkpoint_id"],
            resumed.metadata.get("step"),
        )
    # "sync": a node's checkpoint is stored before the next node starts, so a crash never
    # loses a finished node (the default, "async", writes it while the next one runs).
    output = await compiled.ainvoke(
        None if resumed is not None else input,
        run_config,
        context=GraphContext(ctx),
        durability="sync",
    )
    if not isinstance(output, Mapping):
        raise StepError(f"the graph's output is a {type(output).__name__}, not a mapping")
    return dict(output)


def _with_saver(graph: AnyGraph, saver: DjangoSaver) -> Pregel[Any, Any, Any, Any]:
    if isinstance(graph, StateGraph):
        return graph.compile(checkpointer=saver)
    # A copy: the caller's compiled graph (often a module global) keeps its own checkpointer.
    return graph.copy({"checkpointer": saver})


def _config(thread_id: str, config: dict[str, Any]) -> RunnableConfig:
    configurable = {**config.get("configurable", {}), "thread_id": thread_id}
    return cast(RunnableConfig, {**config, "configurable": configurable})
