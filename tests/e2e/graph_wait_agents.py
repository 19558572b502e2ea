"""Agents of the LangGraph interrupt tests (issue 30): graphs whose nodes call ``interrupt()``,
run by ``run_graph`` as durable waits.

``test.graph_ask``: prepare -> approve (async, one interrupt that says what answers it) ->
finish. ``test.graph_ask_twice`` (a sync agent): prepare -> approve (sync, two interrupts in
one node, what answers them given by ``run_graph(wait_for=...)``, the match built from the
event) -> finish. ``test.graph_nap``: prepare -> nap (``ctx.sleep`` in a node) -> finish.

Loaded by ``runworker`` subprocesses through ``STREAMDESK_AGENT_MODULES``; imports LangGraph,
so only the tests that skip without it use it.
"""

from __future__ import annotations

import functools
import os
from typing import Any, TypedDict

import redis
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import interrupt
from pydantic import BaseModel

from workers.core.events import Envelope, Event
from workers.core.registry import agent
from workers.runtime.context import AgentContext, SyncAgentContext
from workers.runtime.graph import GraphContext, InterruptWait, run_graph

# Hashes the tests read: how often each node really ran, per order.
PREPARED = "graph-waits:prepared"
APPROVE_RUNS = "graph-waits:approve-runs"
FINISHED = "graph-waits:finished"
FAILS = "graph-waits:fails"
ANSWER = "test.graph_answer"


class Ask(BaseModel):
    order: str
    timeout_s: float | None = None


class State(TypedDict, total=False):
    order: str
    timeout_s: float | None
    answers: list[Any]


@functools.cache
def client() -> redis.Redis:
    return redis.Redis.from_url(os.environ["REDIS_URL"], decode_responses=True)


def prepare(state: State) -> State:
    client().hincrby(PREPARED, state["order"], 1)
    return {}


async def approve(state: State, runtime: Runtime[GraphContext]) -> State:
    order = state["order"]
    client().hincrby(APPROVE_RUNS, order, 1)
    # A durable step before the interrupt: this node runs again when the answer comes, and
    # its step must give back the stored value then (once per attempt, never twice).
    await runtime.context.agent.step("before-interrupt", lambda: order)
    answer = interrupt(
        {
            "wait_for": ANSWER,
            "match": {"data.order": order},
            "timeout_s": state.get("timeout_s"),
            "question": f"approve {order}?",
        }
    )
    if order.startswith("flaky") and client().hincrby(FAILS, order, 1) == 1:
        raise RuntimeError("the node fails once, after its answer came")
    return {"answers": [answer]}


def approve_twice(state: State) -> State:
    client().hincrby(APPROVE_RUNS, state["order"], 1)
    first = interrupt({"question": "first?"})
    second = interrupt({"question": "second?", "match": {"data.order": f"{state['order']}/2"}})
    return {"answers": [first, second]}


async def nap(state: State, runtime: Runtime[GraphContext]) -> State:
    client().hincrby(APPROVE_RUNS, state["order"], 1)
    # A wait of the agent's own inside a node: Suspended leaves the graph like a crash
    # would, and the replay resumes at this node, whose sleep is then over.
    await runtime.context.agent.sleep(1)
    return {"answers": ["slept"]}


def finish(state: State) -> State:
    client().hincrby(FINISHED, state["order"], 1)
    return {}


def build(approve_node: Any) -> Any:
    graph = StateGraph(State, context_schema=GraphContext)
    graph.add_node("prepare", prepare)
    graph.add_node("approve", approve_node)
    graph.add_node("finish", finish)
    graph.add_edge(START, "prepare")
    graph.add_edge("prepare", "approve")
    graph.add_edge("approve", "finish")
    graph.add_edge("finish", END)
    return graph.compile()


ONCE, TWICE, NAP = build(approve), build(approve_twice), build(nap)


def by_order(event: Envelope) -> dict[str, Any]:
    return {"data.order": event.data["order"]}


@agent("test.graph_ask", schema=Ask)
async def graph_ask(event: Event[Ask], ctx: AgentContext) -> dict[str, Any]:
    state = await run_graph(
        ctx, ONCE, {"order": event.data.order, "timeout_s": event.data.timeout_s}
    )
    return {"order": state["order"], "answers": state["answers"]}


@agent("test.graph_ask_twice", schema=Ask)
def graph_ask_twice(event: Event[Ask], ctx: SyncAgentContext) -> dict[str, Any]:
    """A sync agent: its graph runs on the worker's loop, and Suspended reaches it there."""
    defaults = InterruptWait(ANSWER, match=by_order, timeout_s=60)
    state = ctx.wait(run_graph(ctx.ctx, TWICE, {"order": event.data.order}, wait_for=defaults))
    return {"order": state["order"], "answers": state["answers"]}


@agent("test.graph_nap", schema=Ask)
async def graph_nap(event: Event[Ask], ctx: AgentContext) -> dict[str, Any]:
    state = await run_graph(ctx, NAP, {"order": event.data.order})
    return {"order": state["order"], "answers": state["answers"]}
