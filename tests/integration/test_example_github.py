"""The GitHub triage example: a tool-calling loop on the built-in model, offline."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from tests.support.engine import counters, run_burst
from workers.core.config import EngineConfig
from workers.core.registry import default_registry
from workers.examples.sandbox.models import SideEffect
from workers.models import AgentRun, RunStatus, StepResult
from workers.producers.publish import publish
from workers.runtime.ratelimit import parse_budgets

pytestmark = pytest.mark.django_db(transaction=True)

ISSUES = [
    (1, "App crashes with a traceback on login", "labels: bug"),
    (2, "Feature: allow dark mode", "labels: enhancement"),
    (3, "How do I configure retries?", "labels: question"),
    (4, "Hello", "no keyword"),
]


def issue(number: int, title: str) -> dict[str, Any]:
    return {"repository": "acme/web", "number": number, "title": title, "author": "octocat"}


def test_each_new_issue_is_labelled_once_through_the_tool(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    for number, title, _ in ISSUES:
        publish("github.issue.opened", issue(number, title), source="github", client=r)
    run_burst(redis_url, config, default_registry, budgets=parse_budgets("github=100/s:100"))

    runs = {run.result["issue"]: run for run in AgentRun.objects.all()}
    assert {run.status for run in runs.values()} == {RunStatus.SUCCEEDED}
    labels = {name: run.result["labels"] for name, run in runs.items()}
    assert labels == {
        "acme/web#1": ["bug"],
        "acme/web#2": ["enhancement"],
        "acme/web#3": ["question"],
        "acme/web#4": ["needs-triage"],
    }
    effects = SideEffect.objects.filter(service="github", action="label_issue")
    assert sorted(effects.values_list("target", flat=True)) == [
        f"acme/web#{n}" for n in (1, 2, 3, 4)
    ]
    # Two model calls per issue (the tool call, then the answer), counted on the run.
    run = runs["acme/web#1"]
    assert (run.llm_calls, run.result["model_calls"]) == (2, 2)
    assert run.prompt_tokens > 0 and run.completion_tokens > 0 and run.cost_usd == 0
    names = sorted(
        StepResult.objects.filter(event_hash=run.event_hash).values_list("name", flat=True)
    )
    assert names == ["triage:0", "triage:0:0:label_issue", "triage:1"]
    assert counters(r)["processed"] == 4


def test_invalid_issue_data_is_refused_at_publish(r: redis.Redis) -> None:
    from workers.core.errors import InvalidEventData

    with pytest.raises(InvalidEventData, match="repository"):
        publish("github.issue.opened", {**issue(1, "x"), "repository": "not a repo"}, client=r)
