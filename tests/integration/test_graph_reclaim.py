"""A LangGraph agent whose worker is SIGKILLed in the middle of the graph: another worker
reclaims the event, takes its lease over and resumes at the node that did not finish.

The worker subprocesses load this module's agent through ``STREAMDESK_AGENT_MODULES``; it
registers only where ``GRAPH_AGENTS_ENV`` is set, so the test process's default registry
stays as it was.
"""

from __future__ import annotations

import asyncio
import functools
import os
import signal
from collections.abc import Iterator
from typing import TypedDict

import pytest
import redis

pytest.importorskip("langgraph", reason="the optional langgraph extra is not installed")

from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

from tests.support.engine import pending, xadd
from tests.support.processes import Workers, workers
from tests.support.wait import wait_for
from workers.core.events import Event
from workers.core.registry import default_registry
from workers.models import AgentRun, GraphCheckpoint, RunStatus
from workers.runtime.context import AgentContext
from workers.runtime.graph import run_graph

__all__ = ["workers"]  # the e2e fixture, used here
pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

GRAPH_AGENTS_ENV = "STREAMDESK_TEST_GRAPH_AGENTS"
# Counters of node runs, and the key that lets the waiting node finish.
PREPARE_RUNS, WAIT_RUNS, RELEASED = "graph:prepare", "graph:wait", "graph:released"


class Order(BaseModel):
    order: str


class State(TypedDict, total=False):
    order: str
    prepared: str
    done: str


@functools.cache
def client() -> redis.Redis:
    return redis.Redis.from_url(os.environ["REDIS_URL"], decode_responses=True)


def prepare(state: State) -> State:
    client().incr(PREPARE_RUNS)
    return {"prepared": f"prepared {state['order']}"}


async def wait(state: State) -> State:
    client().incr(WAIT_RUNS)
    while not client().exists(RELEASED):  # the first worker is killed in here
        await asyncio.sleep(0.05)
    return {"done": f"done after {state['prepared']}"}


def build() -> StateGraph[State, None, State, State]:
    graph = StateGraph(State)
    graph.add_node("prepare", prepare)
    graph.add_node("wait", wait)
    graph.add_edge(START, "prepare")
    graph.add_edge("prepare", "wait")
    graph.add_edge("wait", END)
    return graph


async def two_nodes(event: Event[Order], ctx: AgentContext) -> dict[str, str]:
    return await run_graph(ctx, build(), {"order": event.data.order})


if os.environ.get(GRAPH_AGENTS_ENV) == "1":
    default_registry.register("test.graph_two_nodes", Order, two_nodes)


@pytest.fixture
def graph_workers(workers: Workers) -> Iterator[Workers]:
    workers.env["STREAMDESK_AGENT_MODULES"] = __name__
    workers.env[GRAPH_AGENTS_ENV] = "1"
    yield workers


def test_a_worker_killed_inside_a_graph_is_resumed_at_the_unfinished_node(
    r: redis.Redis, graph_workers: Workers
) -> None:
    xadd(r, {"type": "test.graph_two_nodes", "source": "t", "id": "o1", "data": {"order": "o1"}})
    victim = graph_workers.start("victim")
    wait_for(lambda: r.get(WAIT_RUNS) == "1", what="the victim to reach the second node")
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=10)
    r.set(RELEASED, 1)

    rescuer = graph_workers.start("rescuer", "--burst")
    assert rescuer.wait(timeout=60) == 0, graph_workers.log("rescuer")

    run = AgentRun.objects.get()
    assert (run.status, run.consumer) == (RunStatus.SUCCEEDED, "rescuer"), run.error
    assert run.result == {
        "order": "o1",
        "prepared": "prepared o1",
        "done": "done after prepared o1",
    }
    # The first node ran once, in the victim; the second twice (it never finished there).
    assert (r.get(PREPARE_RUNS), r.get(WAIT_RUNS)) == ("1", "2")
    assert "graph resumes from checkpoint" in graph_workers.log("rescuer")
    assert GraphCheckpoint.objects.filter(thread_id=run.event_hash).count() >= 3
    assert pending(r) == 0
