"""The tool-calling loop in a real worker, against a real local OpenAI-compatible server,
Redis and database: usage lands on the run, and a retry replays the stored calls."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
import redis

from tests.support.engine import AnyData, run_burst, xadd
from tests.support.llm_server import MODEL, ScriptedServer, scripted_server, text, tool_call
from workers.core.config import EngineConfig
from workers.core.registry import Registry
from workers.models import AgentRun, RunStatus, StepResult
from workers.runtime.llm.config import LLMConfig, Price
from workers.runtime.llm.loop import run_tools

pytestmark = pytest.mark.django_db(transaction=True)

PRICE = Price(input=2.0, output=8.0)
SCRIPT = [
    tool_call("label_issue", {"number": 12, "labels": ["bug"]}, usage=(100, 10)),
    text("Labelled #12 as a bug.", usage=(200, 20)),
]


def llm_config(server: ScriptedServer) -> LLMConfig:
    return LLMConfig(
        base_url=server.url, model="triage-model", prices={MODEL: PRICE}, max_retries=0
    )


def triage_registry(labelled: Counter[int], fail_attempts: int = 0) -> Registry:
    attempts = Counter[str]()

    def label_issue(number: int, labels: list[str]) -> dict[str, Any]:
        """Put labels on a GitHub issue."""
        labelled[number] += 1
        return {"number": number, "labels": labels}

    async def triage(event: Any, ctx: Any) -> dict[str, Any]:
        messages = [{"role": "user", "content": f"Triage issue #{event.data.number}"}]
        result = await run_tools(ctx, ctx.model(), messages, [label_issue], name="triage")
        attempts[event.hash] += 1
        if attempts[event.hash] <= fail_attempts:
            raise RuntimeError("crash after the loop")
        return {"answer": result.text, "iterations": result.iterations}

    registry = Registry()
    registry.register("test.triage", AnyData, triage)
    return registry


def publish(r: redis.Redis) -> None:
    xadd(r, {"type": "test.triage", "source": "t", "id": "issue-12", "data": {"number": 12}})


def test_loop_runs_the_tool_once_and_stores_usage_and_cost(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    labelled = Counter[int]()
    publish(r)
    with scripted_server(list(SCRIPT)) as server:
        run_burst(redis_url, config, triage_registry(labelled), llm=llm_config(server))

    assert labelled == {12: 1}
    run = AgentRun.objects.get()
    assert run.status == RunStatus.SUCCEEDED
    assert run.result == {"answer": "Labelled #12 as a bug.", "iterations": 2}
    assert (run.llm_calls, run.prompt_tokens, run.completion_tokens) == (2, 300, 30)
    assert run.cost_usd == pytest.approx(PRICE.cost(300, 30))
    # The second request carried the tool's answer back to the model.
    assert len(server.requests) == 2
    assert server.requests[0]["model"] == "triage-model"
    assert server.requests[0]["tools"][0]["function"]["name"] == "label_issue"
    answer = server.requests[1]["messages"][-1]
    assert (answer["role"], answer["tool_call_id"]) == ("tool", "call_label_issue")
    # Parsed: the stored step comes back from PostgreSQL's jsonb with its keys reordered.
    assert json.loads(answer["content"]) == {"number": 12, "labels": ["bug"]}
    steps = set(StepResult.objects.values_list("name", flat=True))
    assert steps == {"triage:0", "triage:0:0:label_issue", "triage:1"}


def test_a_retry_replays_model_and_tool_calls_from_the_database(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    labelled = Counter[int]()
    publish(r)
    with scripted_server(list(SCRIPT)) as server:
        run_burst(
            redis_url, config, triage_registry(labelled, fail_attempts=1), llm=llm_config(server)
        )

    run = AgentRun.objects.get()
    assert (run.status, run.attempts) == (RunStatus.SUCCEEDED, 2)
    # Two model calls in all: the retry asked the server nothing and labelled nothing again.
    assert len(server.requests) == 2
    assert labelled == {12: 1}
    # Usage is the run's: each call counted once, though the second attempt replayed both.
    assert (run.llm_calls, run.prompt_tokens, run.completion_tokens) == (2, 300, 30)
    assert run.cost_usd == pytest.approx(PRICE.cost(300, 30))


def test_without_an_endpoint_the_rules_model_runs_offline(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    labelled = Counter[int]()

    def rules(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        if messages[-1]["role"] == "tool":
            return {"content": "labelled"}
        return {"tool_calls": [{"function": {"name": "label", "arguments": {"number": 7}}}]}

    def label(number: int) -> str:
        labelled[number] += 1
        return "ok"

    async def agent(event: Any, ctx: Any) -> str:
        result = await run_tools(ctx, ctx.model(rules), [{"role": "user", "content": "x"}], [label])
        return result.text

    registry = Registry()
    registry.register("test.offline", AnyData, agent)
    xadd(r, {"type": "test.offline", "source": "t", "id": "o1", "data": {}})
    run_burst(redis_url, config, registry)

    run = AgentRun.objects.get()
    assert (run.status, run.result, labelled) == (RunStatus.SUCCEEDED, "labelled", {7: 1})
    assert run.llm_calls == 2 and run.prompt_tokens > 0 and run.cost_usd == 0


def test_a_sync_agent_runs_the_loop_through_wait(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    labelled = Counter[int]()

    def label_issue(number: int, labels: list[str]) -> str:
        labelled[number] += 1
        return "ok"

    def agent(event: Any, ctx: Any) -> str:
        messages = [{"role": "user", "content": "triage"}]
        return ctx.wait(run_tools(ctx, ctx.model(), messages, [label_issue])).text

    registry = Registry()
    registry.register("test.triage", AnyData, agent)
    publish(r)
    with scripted_server(list(SCRIPT)) as server:
        run_burst(redis_url, config, registry, llm=llm_config(server))

    run = AgentRun.objects.get()
    assert (run.status, run.result, run.llm_calls) == (
        RunStatus.SUCCEEDED,
        "Labelled #12 as a bug.",
        2,
    )
    assert labelled == {12: 1}
