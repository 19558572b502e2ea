"""Traces with the OpenTelemetry SDK's in-memory exporter: a real webhook POST through Django,
a real worker in-process (its spans are this process's), a real local model server."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from typing import Any

import pytest
import redis
import redis.asyncio as aredis
from django.test import Client
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from tests.support.engine import AnyData, run_burst
from tests.support.llm_server import ScriptedServer, scripted_server, text, tool_call
from tests.support.webhook_signing import hmac_headers
from workers.core import tracing
from workers.core.config import EngineConfig
from workers.core.registry import Registry
from workers.engine.worker import Worker
from workers.runtime.llm.config import LLMConfig
from workers.runtime.llm.loop import run_tools
from workers.store.runs import DjangoRunStore

pytestmark = pytest.mark.django_db(transaction=True)

STREAM = "streamdesk:events"
EVENT_TYPE = "webhook.tickets"
SCRIPT = [tool_call("lookup", {"number": 7}), text("done")]


@pytest.fixture(autouse=True)
def _sources(settings: Any) -> None:
    settings.STREAMDESK_WEBHOOKS = {"tickets": {"scheme": "hmac", "secret": "s3"}}


def deliver(number: int = 7) -> None:
    body = json.dumps({"number": number}).encode()
    response = Client().post(
        "/hooks/tickets/",
        body,
        content_type="application/json",
        headers={**hmac_headers("s3", body), "X-Delivery": f"d-{number}"},
    )
    assert response.status_code == 202, response.content


def lookup(number: int) -> dict[str, Any]:
    """Look a ticket up."""
    return {"number": number, "state": "open"}


def registry(agent: Any = None) -> Registry:
    async def triage(event: Any, ctx: Any) -> str:
        messages = [{"role": "user", "content": f"ticket {event.data.number}"}]
        return (await run_tools(ctx, ctx.model(), messages, [lookup], name="triage")).text

    found = Registry()
    found.register(EVENT_TYPE, AnyData, agent or triage)
    return found


def llm(server: ScriptedServer) -> LLMConfig:
    return LLMConfig(base_url=server.url, model="m", max_retries=0)


def by_name(finished: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    out: dict[str, list[ReadableSpan]] = {}
    for span in finished:
        out.setdefault(span.name, []).append(span)
    return out


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def test_one_webhook_delivery_is_one_trace_from_intake_to_settle(
    r: redis.Redis, redis_url: str, config: EngineConfig, spans: InMemorySpanExporter
) -> None:
    with scripted_server(list(SCRIPT)) as server:
        deliver()
        run_burst(redis_url, config, registry(), llm=llm(server))
    finished = spans.get_finished_spans()
    names = by_name(finished)
    assert len({s.context.trace_id for s in finished}) == 1
    [intake] = names["webhook tickets"]
    [send] = names[f"send {STREAM}"]
    [process] = names[f"process {STREAM}"]
    [gate] = names["gate"]
    [agent] = names[f"agent {EVENT_TYPE}"]
    [settle] = names["settle"]
    chats = names["chat m"]
    [tool] = names["execute_tool lookup"]
    assert (intake.kind, send.kind, process.kind) == (
        SpanKind.SERVER,
        SpanKind.PRODUCER,
        SpanKind.CONSUMER,
    )
    assert parent_of(send) == intake.context.span_id
    assert parent_of(process) == send.context.span_id
    for child in (gate, agent, settle):
        assert parent_of(child) == process.context.span_id
    steps = {s.name: s for s in finished if s.name.startswith("step ")}
    assert set(steps) == {"step triage:0", "step triage:0:0:lookup", "step triage:1"}
    assert {parent_of(s) for s in steps.values()} == {agent.context.span_id}
    assert {parent_of(c) for c in chats} == {
        steps["step triage:0"].context.span_id,
        steps["step triage:1"].context.span_id,
    }
    assert parent_of(tool) == steps["step triage:0:0:lookup"].context.span_id
    attributes = dict(process.attributes or {})
    entry_id = r.xrange(STREAM)[0][0]
    assert attributes["messaging.system"] == "redis"
    assert attributes["messaging.destination.name"] == STREAM
    assert attributes["messaging.consumer.group.name"] == config.group
    assert attributes["messaging.message.id"] == entry_id
    assert attributes["messaging.operation.type"] == "process"
    assert (
        attributes["streamdesk.event.hash"] == dict(send.attributes or {})["streamdesk.event.hash"]
    )
    assert dict(send.attributes or {})["messaging.message.id"] == entry_id
    assert chats[0].attributes is not None and chats[0].attributes["gen_ai.usage.input_tokens"]
    assert gate.start_time <= gate.end_time <= agent.start_time <= settle.start_time
    assert process.start_time <= gate.start_time and settle.end_time <= process.end_time


def test_envelope_carries_traceparent_of_the_producer_span(
    r: redis.Redis, spans: InMemorySpanExporter
) -> None:
    deliver()
    [(_, fields)] = r.xrange(STREAM)
    envelope = json.loads(fields["event"])
    [send] = by_name(spans.get_finished_spans())[f"send {STREAM}"]
    version, trace_id, span_id, flags = envelope["traceparent"].split("-")
    assert (trace_id, span_id) == (f"{send.context.trace_id:032x}", f"{send.context.span_id:016x}")
    assert version == "00" and int(flags, 16) & 1  # sampled


async def _crash_then_reclaim(url: str, first: EngineConfig, second: EngineConfig) -> None:
    started = asyncio.Event()

    async def hangs_once(event: Any, ctx: Any) -> str:
        if ctx.deliveries == 1:
            started.set()
            await asyncio.sleep(60)  # "crashes": its worker stops and gives it up
        return "second time"

    clients = [aredis.Redis.from_url(url, decode_responses=True) for _ in range(2)]
    try:
        a = Worker(first, clients[0], registry(hangs_once), DjangoRunStore())
        running = asyncio.create_task(a.run())
        await asyncio.wait_for(started.wait(), 10)
        a.request_stop()
        await asyncio.wait_for(running, 10)
        b = Worker(second, clients[1], registry(hangs_once), DjangoRunStore())
        await asyncio.wait_for(b.run(), 20)
        assert b.processed == 1
    finally:
        for client in clients:
            await client.aclose()


def test_a_reclaimed_attempt_is_a_new_span_in_the_same_trace(
    r: redis.Redis, redis_url: str, config: EngineConfig, spans: InMemorySpanExporter
) -> None:
    deliver()
    first = dataclasses.replace(config, consumer="a", drain_timeout_s=0.2, burst=False)
    second = dataclasses.replace(config, consumer="b")
    asyncio.run(_crash_then_reclaim(redis_url, first, second))
    finished = spans.get_finished_spans()
    names = by_name(finished)
    [send] = names[f"send {STREAM}"]
    gave_up, reclaimed = sorted(names[f"process {STREAM}"], key=lambda s: s.start_time or 0)
    assert len({s.context.trace_id for s in finished}) == 1
    assert gave_up.context.span_id != reclaimed.context.span_id
    assert parent_of(gave_up) == parent_of(reclaimed) == send.context.span_id
    assert gave_up.status.status_code is StatusCode.ERROR
    assert reclaimed.status.status_code is StatusCode.UNSET
    assert dict(gave_up.attributes or {})["messaging.client.id"] == "a"
    assert dict(reclaimed.attributes or {})["messaging.client.id"] == "b"
    assert dict(reclaimed.attributes or {})["streamdesk.delivery_count"] == 2


def test_without_tracing_no_span_and_no_traceparent(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    exporter = InMemorySpanExporter()
    TracerProvider().add_span_processor(SimpleSpanProcessor(exporter))
    assert not tracing.ACTIVE
    with scripted_server(list(SCRIPT)) as server:
        deliver()
        worker = run_burst(redis_url, config, registry(), llm=llm(server))
    assert worker.processed == 1
    [(_, fields)] = r.xrange(STREAM)
    assert "traceparent" not in json.loads(fields["event"])
    assert not tracing.ACTIVE and exporter.get_finished_spans() == ()


def test_an_attempt_its_sampler_dropped_records_no_span_but_keeps_the_trace_current(
    r: redis.Redis, redis_url: str, config: EngineConfig, spans: InMemorySpanExporter
) -> None:
    """A sender's "not sampled" decision (flags 00) is followed end to end: no span is
    recorded, the agent still runs and settles, its context is the sender's trace."""
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    seen: list[str | None] = []

    async def agent(event: Any, ctx: Any) -> str:
        seen.append(tracing.current_trace_id())
        messages = [{"role": "user", "content": "ticket"}]
        return (await run_tools(ctx, ctx.model(), messages, [lookup], name="triage")).text

    body = json.dumps({"number": 7}).encode()
    headers = {**hmac_headers("s3", body), "X-Delivery": "d-7"}
    headers["traceparent"] = f"00-{trace_id}-00f067aa0ba902b7-00"
    response = Client().post("/hooks/tickets/", body, "application/json", headers=headers)
    assert response.status_code == 202, response.content
    with scripted_server(list(SCRIPT)) as server:
        worker = run_burst(redis_url, config, registry(agent), llm=llm(server))
    [(_, fields)] = r.xrange(STREAM)
    assert json.loads(fields["event"])["traceparent"].startswith(f"00-{trace_id}-")
    assert json.loads(fields["event"])["traceparent"].endswith("-00")
    assert worker.processed == 1 and seen == [trace_id]
    assert spans.get_finished_spans() == ()


def test_a_delayed_event_keeps_the_traceparent_of_its_publish(
    r: redis.Redis, spans: InMemorySpanExporter
) -> None:
    from workers import publish
    from workers.core.keys import Keys
    from workers.timers.delayed import Mover

    publish("demo.echo", {"n": 1}, delay_s=0.001)
    time.sleep(0.01)
    Mover(r, Keys()).move_due(STREAM)
    [(_, fields)] = r.xrange(STREAM)
    [send] = by_name(spans.get_finished_spans())[f"send {STREAM}"]
    _, trace_id, span_id, _ = json.loads(fields["event"])["traceparent"].split("-")
    assert (trace_id, span_id) == (f"{send.context.trace_id:032x}", f"{send.context.span_id:016x}")
