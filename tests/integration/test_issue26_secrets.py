"""Issue 26, item 7: a configured secret never reaches a log line or a stored error text.

An agent calls a real local OpenAI-compatible server through the runtime; the server answers
401 with the API key in its message, as OpenAI's "Incorrect API key provided: sk-..." does.
The key must appear in no log line (JSON or text), no ``AgentRun.error``, no timeline row and
no dead letter, while the rest of the message stays readable.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import logging
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.test import Client
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.console import member_of
from tests.support.engine import STREAM, AnyData, counters, run_burst, xadd
from tests.support.llm_server import scripted_server
from workers.core.config import EngineConfig
from workers.core.logs import JsonFormatter, TextFormatter
from workers.core.registry import Registry
from workers.models import AgentRun, TimelineStep
from workers.runtime.llm.config import LLMConfig
from workers.runtime.llm.errors import ModelCallFailed
from workers.runtime.llm.models import OpenAIChatModel

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def logged() -> Iterator[io.StringIO]:
    """Every line the root logger writes, through both formatters."""
    out = io.StringIO()
    handlers = [logging.StreamHandler(out), logging.StreamHandler(out)]
    handlers[0].setFormatter(JsonFormatter())
    handlers[1].setFormatter(TextFormatter())
    root = logging.getLogger()
    previous = root.level
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield out
    for handler in handlers:
        root.removeHandler(handler)
    root.setLevel(previous)


def echoed_401(key: str) -> tuple[int, dict[str, Any]]:
    message = f"Incorrect API key provided: {key}. You can find your API key at example.test."
    return 401, {"error": {"message": message, "type": "invalid_request_error"}}


def calling_the_model() -> Registry:
    async def agent(event: Any, ctx: Any) -> None:
        await ctx.model().complete([{"role": "user", "content": "triage #12"}], [])

    registry = Registry()
    registry.register("t.llm", AnyData, agent)
    return registry


def test_an_api_key_echoed_by_the_endpoint_is_masked_everywhere(
    r: redis.Redis, redis_url: str, config: EngineConfig, logged: io.StringIO
) -> None:
    # Fresh per run: a key registered by an earlier test cannot make this one pass.
    key = f"sk-proj-{secrets.token_urlsafe(24)}"
    xadd(r, {"type": "t.llm", "id": "1", "data": {}})
    with scripted_server([echoed_401(key), echoed_401(key)]) as server:
        llm = LLMConfig(base_url=server.url, api_key=key, model="m", max_retries=0)
        run_burst(
            redis_url, dataclasses.replace(config, max_deliveries=2), calling_the_model(), llm=llm
        )
        assert [h["authorization"] for h in server.headers] == [f"Bearer {key}"] * 2

    assert counters(r)["dead_lettered"] == 1
    [(_, letter)] = r.xrange(f"{STREAM}:dead")
    run = AgentRun.objects.get()
    details = [step.detail for step in TimelineStep.objects.all()]
    lines = logged.getvalue()
    texts = {"logs": lines, "error": run.error, "letter": json.dumps(letter), "steps": details}
    assert {name for name, text in texts.items() if key in str(text)} == set()
    # What the endpoint said is still there, with the key masked.
    assert "Incorrect API key provided: ***." in run.error
    assert "Incorrect API key provided: ***." in letter["error"]
    assert any("Incorrect API key provided: ***." in detail for detail in details)
    assert "ModelCallFailed" in lines
    # And so do the pages a viewer opens: the event's and the dead letters'.
    viewer = Client()
    viewer.force_login(member_of("vera", "viewers"))
    for path in (f"/events/{run.event_hash}/", f"/streams/{STREAM}/dead/"):
        page = viewer.get(path)
        assert page.status_code == 200 and key not in page.content.decode(), path
    assert "Incorrect API key provided: ***." in page.content.decode()


def test_spans_record_the_failure_with_the_key_masked(
    r: redis.Redis, redis_url: str, config: EngineConfig, spans: InMemorySpanExporter
) -> None:
    # Spans leave the process for a collector: the exception they record is redacted too.
    key = f"sk-proj-{secrets.token_urlsafe(24)}"
    xadd(r, {"type": "t.llm", "id": "1", "data": {}})
    with scripted_server([echoed_401(key)]) as server:
        llm = LLMConfig(base_url=server.url, api_key=key, model="m", max_retries=0)
        once = dataclasses.replace(config, max_deliveries=1)
        run_burst(redis_url, once, calling_the_model(), llm=llm)
    finished = spans.get_finished_spans()
    recorded = [
        json.dumps([dict(e.attributes or {}) for e in one.events] + [one.status.description])
        for one in finished
    ]
    assert not [text for text in recorded if key in text]
    chat = next(one for one in finished if one.name == "chat m")
    [event] = chat.events
    assert "Incorrect API key provided: ***." in str((event.attributes or {})["exception.message"])


def test_the_model_call_failed_an_agent_catches_holds_no_key() -> None:
    # An agent may keep str(exc) in its result: the message itself is masked.
    key = f"sk-proj-{secrets.token_urlsafe(24)}"
    with scripted_server([echoed_401(key)]) as server, pytest.raises(ModelCallFailed) as caught:
        model = OpenAIChatModel(
            LLMConfig(base_url=server.url, api_key=key, model="m", max_retries=0)
        )
        asyncio.run(model.complete([{"role": "user", "content": "hi"}], []))
    assert key not in str(caught.value) and "provided: ***." in str(caught.value)
