"""One event, one trace, across a real crash: a ``runworker`` SIGKILLed mid-agent, its entry
reclaimed by a second ``runworker`` whose attempt is a new span in the producer's trace.

The test process publishes with its own SDK provider (in-memory exporter); the workers trace
through the standard ``OTEL_TRACES_EXPORTER=console``, as an operator would switch it on, and
the second worker's spans are read back from its stdout.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

from tests.support.processes import ROOT, TIMINGS, Workers
from tests.support.wait import wait_for
from workers.core import tracing
from workers.core.registry import Registry
from workers.models import AgentRun, RunStatus
from workers.producers.publish import publish

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

STREAM = "streamdesk:events"
EVENT_TYPE = "e2e.trace.crash"  # tests/e2e/trace_agents.py, loaded by the workers only
# Generous: two Django processes start on a loaded 2-core machine.
START_S = 60
FINISH_S = 90


class Crash(BaseModel):
    """The agent's schema, repeated here so the test process validates what it publishes
    without importing the agents module (whose @agent would fill the global registry)."""

    marker: str


@pytest.fixture
def spans() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    """Tracing on in the test process with a provider of its own, as in
    tests/integration/test_tracing.py: the global provider stays unset for other tests."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.activate(provider)
    yield provider, exporter
    tracing.deactivate()
    provider.shutdown()


@pytest.fixture
def traced_env(worker_env: dict[str, str]) -> dict[str, str]:
    # Whatever OTEL_* the developer's shell has (OTEL_SDK_DISABLED, an OTLP endpoint) must
    # not change how the workers trace: console only, which needs no collector.
    env = {k: v for k, v in worker_env.items() if not k.startswith("OTEL_")}
    env.update(
        OTEL_TRACES_EXPORTER="console",
        OTEL_SERVICE_NAME="streamdesk-e2e",
        STREAMDESK_AGENT_MODULES="tests.e2e.trace_agents",
    )
    return env


def console_spans(text: str) -> list[dict[str, Any]]:
    """The span objects ConsoleSpanExporter printed (indented JSON, one after another),
    skipping anything else on the stream: a stray print cannot break the parse."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    at = text.find("{")
    while at != -1:
        try:
            obj, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            end = at + 1
        else:
            if isinstance(obj, dict) and {"name", "context", "kind"} <= obj.keys():
                found.append(obj)
        at = text.find("{", end)
    return found


def hex_id(value: str | None) -> int | None:
    """The SDK's JSON writes ids as ``0x...`` hex strings (``parent_id`` null at a root)."""
    return int(value, 16) if value else None


def start_worker(
    workers: Workers, env: dict[str, str], name: str, *args: str
) -> subprocess.Popen[bytes]:
    """Like ``Workers.start`` but stdout (the spans) apart from stderr (the logs,
    ``workers.log(name)``); registered with the pool so teardown kills it whatever happens."""
    with (
        open(workers.log_dir / f"{name}.spans", "wb") as out,
        open(workers.log_dir / f"{name}.log", "wb") as err,
    ):
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "runworker", "--consumer", name, *TIMINGS, *args],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=err,
        )
    workers.procs.append(proc)
    return proc


def until(
    workers: Workers, proc: subprocess.Popen[bytes], name: str, ok: Callable[[], bool], what: str
) -> None:
    """``wait_for`` that gives up at once if the worker died, and shows its log either way."""
    try:
        wait_for(lambda: ok() or proc.poll() is not None, timeout_s=START_S, what=what)
    except AssertionError as timed_out:
        raise AssertionError(f"{timed_out}\n{workers.log(name)}") from None
    assert proc.poll() is None, f"{name} exited {proc.returncode}:\n{workers.log(name)}"


def test_sigkilled_attempt_is_reclaimed_as_a_new_span_in_the_same_trace(
    r: redis.Redis,
    workers: Workers,
    traced_env: dict[str, str],
    spans: tuple[TracerProvider, InMemorySpanExporter],
    tmp_path: Path,
) -> None:
    provider, exporter = spans
    marker = tmp_path / "first-attempt-started"
    schemas = Registry()
    schemas.register_schema(EVENT_TYPE, Crash)
    with provider.get_tracer("tests").start_as_current_span("test publishes") as root:
        entry_id = publish(
            EVENT_TYPE, {"marker": str(marker)}, client=r, registry=schemas, id="crash-1"
        )
    [send] = [s for s in exporter.get_finished_spans() if s.name == f"send {STREAM}"]
    trace_id = root.get_span_context().trace_id
    assert send.context is not None and send.context.trace_id == trace_id
    entries: list[tuple[str, dict[str, str]]] = r.xrange(STREAM)  # type: ignore[assignment]
    [(_, fields)] = entries
    # What the workers will extract: the producer span's context, in W3C form.
    traceparent = json.loads(fields["event"])["traceparent"]
    assert traceparent.split("-")[1:3] == [f"{trace_id:032x}", f"{send.context.span_id:016x}"]
    event_hash = dict(send.attributes or {})["streamdesk.event.hash"]

    a = start_worker(workers, traced_env, "a")
    # The agent writes the marker once its first delivery runs: past the gate and the
    # duplicate check, so the kill lands mid-agent and nothing of the attempt is settled.
    until(workers, a, "a", marker.exists, "worker a's agent to start")
    a.send_signal(signal.SIGKILL)
    assert a.wait(timeout=10) == -signal.SIGKILL
    assert not AgentRun.objects.filter(status=RunStatus.SUCCEEDED).exists()

    # --burst: b reclaims the entry once idle past --claim-idle-ms (TIMINGS), runs it and
    # exits 0 with nothing pending, and the SDK's exit hook flushes its batch of spans.
    b = start_worker(workers, traced_env, "b", "--burst")
    assert workers.exit_code(b, "b", FINISH_S) == 0, workers.log("b")
    printed = console_spans((workers.log_dir / "b.spans").read_text(errors="replace"))
    context = f"worker b's spans: {[s['name'] for s in printed]}\n{workers.log('b')}"

    processes = [s for s in printed if s["name"] == f"process {STREAM}"]
    assert len(processes) == 1, context
    [process] = processes
    attributes = process["attributes"]
    assert process["kind"] == "SpanKind.CONSUMER", context
    assert hex_id(process["context"]["trace_id"]) == trace_id, context
    # A new span whose parent is the producer span from the envelope, not the first
    # attempt's span: that one died unended with worker a, so no exporter ever saw it.
    assert hex_id(process["parent_id"]) == send.context.span_id, context
    assert attributes["messaging.message.id"] == entry_id, context
    assert attributes["streamdesk.delivery_count"] == 2, context
    assert attributes["messaging.client.id"] == "b", context
    assert attributes["streamdesk.event.hash"] == event_hash, context
    assert process["status"]["status_code"] != "ERROR", context
    # Everything b traced for the event is in the one trace, under its consumer span.
    assert {hex_id(s["context"]["trace_id"]) for s in printed} == {trace_id}, context
    children = {
        s["name"]
        for s in printed
        if hex_id(s["parent_id"]) == hex_id(process["context"]["span_id"])
    }
    assert {"gate", f"agent {EVENT_TYPE}", "settle"} <= children, context

    [run] = AgentRun.objects.filter(event_hash=event_hash)
    assert (run.status, run.consumer, run.attempts) == (RunStatus.SUCCEEDED, "b", 2)
    assert run.entry_id == entry_id
    assert AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count() == 1
    assert marker.read_text() == "a"  # the first delivery ran in a, which left no span
