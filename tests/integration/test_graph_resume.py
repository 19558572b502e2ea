"""LangGraph agents in a real worker: a retried event resumes at the last finished node."""

from __future__ import annotations

from collections import Counter
from typing import Any, TypedDict

import pytest
import redis

pytest.importorskip("langgraph", reason="the optional langgraph extra is not installed")

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from pydantic import BaseModel

from tests.support.engine import counters, pending, run_burst, xadd
from workers.core.config import EngineConfig
from workers.core.events import Event
from workers.core.registry import Registry
from workers.models import AgentRun, GraphCheckpoint, RunStatus, StepResult
from workers.runtime.context import SyncAgentContext, current_context
from workers.runtime.graph import DjangoSaver, GraphContext, run_graph

pytestmark = pytest.mark.django_db(transaction=True)


class Numbers(BaseModel):
    n: int


class State(TypedDict, total=False):
    n: int
    doubled: int
    total: int
    sent: dict[str, Any]


class Flaky:
    """A two-node graph whose second node fails its first ``fail_times`` runs; counts runs."""

    def __init__(self, fail_times: int = 1) -> None:
        self.runs: Counter[str] = Counter()
        self.fail_times = fail_times
        self.hashes: list[str] = []

    def graph(self) -> StateGraph[State, GraphContext, State, State]:
        graph = StateGraph(State, context_schema=GraphContext)
        graph.add_node("double", self.double)
        graph.add_node("add", self.add)
        graph.add_edge(START, "double")
        graph.add_edge("double", "add")
        graph.add_edge("add", END)
        return graph

    def double(self, state: State) -> State:
        # A sync node: LangGraph runs it in a thread, with the agent's context variables.
        self.runs["double"] += 1
        self.hashes.append(current_context().event_hash)
        return {"doubled": state["n"] * 2}

    async def add(self, state: State, runtime: Runtime[GraphContext]) -> State:
        self.runs["add"] += 1
        ctx = runtime.context.agent
        # A side effect in a durable step: it runs once even though this node runs twice.
        sent = await ctx.step("send", self.send, ctx.idempotency_key("send"))
        if self.runs["add"] <= self.fail_times:
            raise RuntimeError(f"add fails on run {self.runs['add']}")
        return {"total": state["doubled"] + 1, "sent": sent}

    def send(self, key: str) -> dict[str, Any]:
        self.runs["send"] += 1
        return {"key": key}


def registry_for(graph: Any, after: Counter[str] | None = None, **config: Any) -> Registry:
    """``after``: the agent fails once more after its graph finished, counted there."""
    registry = Registry()

    async def agent(event: Event[Numbers], ctx: Any) -> dict[str, Any]:
        state = await run_graph(ctx, graph, {"n": event.data.n}, **config)
        if after is not None and not after["failed"]:
            after["failed"] += 1
            raise RuntimeError("the agent fails after its graph finished")
        return state

    registry.register("test.graph", Numbers, agent)
    return registry


def test_a_retried_graph_resumes_after_its_last_finished_node(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    xadd(r, {"type": "test.graph", "id": "g1", "data": {"n": 5}})
    flaky = Flaky(fail_times=1)

    run_burst(redis_url, config, registry_for(flaky.graph()))

    assert flaky.runs == {"double": 1, "add": 2, "send": 1}
    row = AgentRun.objects.get()
    assert flaky.hashes == [row.event_hash]
    assert (row.status, row.attempts) == (RunStatus.SUCCEEDED, 2)
    key = f"{row.event_hash}:send"
    assert row.result == {"n": 5, "doubled": 10, "total": 11, "sent": {"key": key}}
    assert GraphCheckpoint.objects.filter(thread_id=row.event_hash).exists()
    assert StepResult.objects.filter(event_hash=row.event_hash, name="send").exists()
    stats = counters(r)
    assert (stats["failed"], stats["processed"]) == (1, 1)
    assert pending(r) == 0


def test_a_compiled_graph_resumes_too_and_keeps_its_own_checkpointer(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    xadd(r, {"type": "test.graph", "id": "g2", "data": {"n": 1}})
    flaky = Flaky(fail_times=2)
    compiled = flaky.graph().compile()

    run_burst(redis_url, config, registry_for(compiled))

    assert flaky.runs == {"double": 1, "add": 3, "send": 1}
    assert compiled.checkpointer is None
    row = AgentRun.objects.get()
    assert (row.status, row.attempts, row.result["total"]) == (RunStatus.SUCCEEDED, 3, 3)


def test_an_agent_failing_after_its_graph_finished_runs_no_node_again(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    xadd(r, {"type": "test.graph", "id": "g3", "data": {"n": 2}})
    flaky = Flaky(fail_times=0)
    after: Counter[str] = Counter()

    run_burst(redis_url, config, registry_for(flaky.graph(), after))

    assert flaky.runs == {"double": 1, "add": 1, "send": 1}
    row = AgentRun.objects.get()
    assert (row.status, row.attempts, row.result["total"]) == (RunStatus.SUCCEEDED, 2, 5)


def test_each_event_has_its_own_thread(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    for i in range(3):
        xadd(r, {"type": "test.graph", "id": f"many-{i}", "data": {"n": i}})
    flaky = Flaky(fail_times=0)

    run_burst(redis_url, config, registry_for(flaky.graph()))

    assert flaky.runs == {"double": 3, "add": 3, "send": 3}
    totals = sorted(row.result["total"] for row in AgentRun.objects.all())
    assert totals == [1, 3, 5]
    threads = set(GraphCheckpoint.objects.values_list("thread_id", flat=True))
    assert threads == set(AgentRun.objects.values_list("event_hash", flat=True))


def test_run_graph_passes_its_config_on_and_keeps_the_event_hash_as_thread(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    xadd(r, {"type": "test.graph", "id": "cfg", "data": {"n": 1}})
    configurable = {"thread_id": "not this one", "tenant": "acme"}
    registry = registry_for(Flaky(fail_times=0).graph(), configurable=configurable)

    run_burst(redis_url, config, registry)

    row = AgentRun.objects.get()
    assert row.status == RunStatus.SUCCEEDED, row.error
    latest = DjangoSaver().get_tuple({"configurable": {"thread_id": row.event_hash}})
    # LangGraph copies string values of ``configurable`` into each checkpoint's metadata.
    assert latest is not None and latest.metadata["tenant"] == "acme"
    assert not GraphCheckpoint.objects.filter(thread_id="not this one").exists()


def test_a_sync_agent_runs_its_graph_on_the_workers_loop(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    xadd(r, {"type": "test.graph", "id": "sync", "data": {"n": 3}})
    flaky = Flaky(fail_times=1)
    graph = flaky.graph()
    registry = Registry()

    def agent(event: Event[Numbers], ctx: SyncAgentContext) -> dict[str, Any]:
        return ctx.wait(run_graph(ctx.ctx, graph, {"n": event.data.n}))

    registry.register("test.graph", Numbers, agent)
    run_burst(redis_url, config, registry)

    assert flaky.runs == {"double": 1, "add": 2, "send": 1}
    row = AgentRun.objects.get()
    assert (row.status, row.result["total"]) == (RunStatus.SUCCEEDED, 7)


def test_a_node_out_of_rate_budget_defers_the_event_and_it_resumes_at_that_node(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """``Deferred`` (a BaseException) passes through LangGraph like any node failure: the
    event waits for its token, then resumes at the node that was out of budget."""
    from workers.runtime.ratelimit import Budget

    runs: Counter[str] = Counter()

    def first(state: State) -> State:
        runs["first"] += 1
        return {"doubled": state["n"] * 2}

    async def call_api(state: State, runtime: Runtime[GraphContext]) -> State:
        await runtime.context.agent.tool("api")
        runs["call_api"] += 1
        return {"total": state["doubled"] + 1}

    graph = StateGraph(State, context_schema=GraphContext)
    graph.add_node("first", first)
    graph.add_node("call_api", call_api)
    graph.add_edge(START, "first")
    graph.add_edge("first", "call_api")
    graph.add_edge("call_api", END)

    async def agent(event: Event[Numbers], ctx: Any) -> dict[str, Any]:
        return await run_graph(ctx, graph, {"n": event.data.n})

    registry = Registry()
    registry.register("test.graph", Numbers, agent)
    for n in range(3):
        xadd(r, {"type": "test.graph", "source": "t", "id": f"g{n}", "data": {"n": n}})
    budgets = {"api": Budget("api", rate=10, burst=1)}
    run_burst(redis_url, config, registry, budgets=budgets)

    assert sorted(AgentRun.objects.values_list("result", flat=True), key=str) == sorted(
        [{"n": n, "doubled": 2 * n, "total": 2 * n + 1} for n in range(3)], key=str
    )
    assert counters(r)["deferred"] >= 1 and counters(r).get("failed", 0) == 0
    # The first node ran once per event, deferred or not.
    assert (runs["first"], runs["call_api"]) == (3, 3)
