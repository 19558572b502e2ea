"""OpenTelemetry traces, optional: W3C trace context in the envelope, spans around each stage.

OpenTelemetry is imported only here and only once tracing is switched on (``configure`` at a
process's edge, or ``activate`` with a provider). Until then ``ACTIVE`` is False and every
caller checks that one boolean, once per batch or attempt, before touching anything else:
with tracing off no span object is created on the hot path.

The envelope carries the producer's span context as CloudEvents' distributed-tracing
extension attributes ``traceparent`` and ``tracestate``. They are not part of the event hash
(``events.event_hash``), so a redelivered webhook with a new trace is still the same event.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import inspect
import logging
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from workers.core.errors import ConfigurationError, Deferred
from workers.core.events import Envelope, event_hash
from workers.core.span_errors import record_exception, record_failure, started

log = logging.getLogger("streamdesk.tracing")

# The hot path's one check. Read as ``tracing.ACTIVE`` (never ``from ... import ACTIVE``,
# which would copy the value at import).
ACTIVE = False
INSTRUMENTATION = "streamdesk"
SYSTEM = "redis"
TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"

_tracer: Any = None
_propagator: Any = None
# configure() looked once: later calls (every publish()) return at once.
_configured = False


def activate(provider: Any | None = None) -> None:
    """Trace with ``provider`` (an SDK ``TracerProvider``), else the global one."""
    global ACTIVE, _tracer, _propagator
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    source = provider if provider is not None else trace.get_tracer_provider()
    _tracer = source.get_tracer(INSTRUMENTATION)
    # W3C always: CloudEvents' extension is defined as W3C trace context, whatever the
    # application's global propagator (B3, Jaeger...) is.
    _propagator = TraceContextTextMapPropagator()
    ACTIVE = True


def deactivate() -> None:
    global ACTIVE, _tracer, _configured, _propagator
    ACTIVE, _tracer, _configured, _propagator = False, None, False, None


def configure(environ: Mapping[str, str] = os.environ) -> bool:
    """At a process's edge (runworker, the console, the relay): switch tracing on if the
    ``otel`` extra is installed and either the application already set a global SDK provider
    or the standard ``OTEL_TRACES_EXPORTER`` / ``OTEL_EXPORTER_OTLP_ENDPOINT`` ask for one.
    Returns whether tracing is on. Looks once per process (``deactivate`` forgets)."""
    global _configured
    if ACTIVE or _configured:
        return ACTIVE
    _configured = True
    if environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    try:
        from opentelemetry import trace
    except ImportError:
        return False
    if not _has_sdk_provider(trace.get_tracer_provider()):
        try:
            exporters = _exporters(environ)
        except ConfigurationError as exc:
            # Said once at start-up; a tracing typo must not stop events being handled.
            log.error("tracing is off: %s", exc)
            return False
        if not exporters:
            return False
        trace.set_tracer_provider(_sdk_provider(exporters))
    activate()
    return True


def _has_sdk_provider(provider: Any) -> bool:
    # The API's placeholders until an application sets a real provider.
    return type(provider).__name__ not in {"ProxyTracerProvider", "NoOpTracerProvider"}


# OTLP's transports (OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL) and the module of each exporter,
# all in the separate opentelemetry-exporter-otlp package, which the otel extra does not install.
OTLP_MODULES = {
    "http/protobuf": "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "grpc": "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
}


def _exporters(environ: Mapping[str, str]) -> list[Any]:
    """The exporters the standard variables name, a comma-separated list of ``otlp`` and
    ``console`` (in the SDK); ``none`` or nothing set: none. A name or protocol streamdesk
    cannot serve is a ``ConfigurationError`` at start-up, not spans silently lost."""
    names = [n.strip().lower() for n in environ.get("OTEL_TRACES_EXPORTER", "").split(",")]
    names = [n for n in names if n and n != "none"]
    if not names and environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        names = ["otlp"]
    unknown = sorted(set(names) - {"otlp", "console"})
    if unknown:
        raise ConfigurationError(
            f"OTEL_TRACES_EXPORTER: {', '.join(unknown)} unknown; streamdesk knows otlp, "
            "console and none"
        )
    out: list[Any] = []
    if "console" in names:
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        out.append(ConsoleSpanExporter())
    if "otlp" in names:
        out.append(_otlp(environ))
    return out


def _otlp(environ: Mapping[str, str]) -> Any:
    protocol = (
        environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"  # the specification's default
    ).strip()
    if protocol not in OTLP_MODULES:
        raise ConfigurationError(
            f"OTLP protocol {protocol!r}: streamdesk exports over {' or '.join(OTLP_MODULES)}"
        )
    try:
        module = importlib.import_module(OTLP_MODULES[protocol])
    except ImportError as exc:
        raise ConfigurationError(
            f"OTEL_TRACES_EXPORTER=otlp over {protocol} needs "
            "`pip install opentelemetry-exporter-otlp`"
        ) from exc
    return module.OTLPSpanExporter()


def _sdk_provider(exporters: list[Any]) -> Any:
    # The SDK reads OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER(_ARG)
    # and OTEL_BSP_* itself.
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create())
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def trace_id_of(traceparent: str | None) -> str | None:
    """The 32 hex digits of a ``traceparent`` value, None if it is not one (pure: the
    console shows it without OpenTelemetry installed)."""
    parts = (traceparent or "").split("-")
    if len(parts) < 4 or len(parts[1]) != 32 or parts[1] == "0" * 32:
        return None
    trace_id = parts[1].lower()
    return trace_id if all(c in "0123456789abcdef" for c in trace_id) else None


def current_trace_id() -> str | None:
    """The trace id of the current span, for log lines; None with tracing off."""
    if not ACTIVE:
        return None
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None


# -- producers --------------------------------------------------------------------------


@dataclass(slots=True)
class Sending:
    """Envelopes on their way to a stream, stamped with their producer spans' context."""

    envelopes: list[Envelope]
    spans: list[Any] = field(default_factory=list)

    def sent(self, entry_ids: list[str]) -> None:
        for span, entry_id in zip(self.spans, entry_ids, strict=False):
            span.set_attribute("messaging.message.id", entry_id)


@contextlib.contextmanager
def sending(stream: str, envelopes: list[Envelope]) -> Iterator[Sending]:
    """One PRODUCER span per envelope (siblings, each a child of the current span), its
    context injected into the envelope. With tracing off the envelopes pass through."""
    if not ACTIVE:
        yield Sending(envelopes)
        return
    from opentelemetry import trace

    out = Sending([])
    for envelope in envelopes:
        one = _tracer.start_span(
            f"send {stream}",
            kind=trace.SpanKind.PRODUCER,
            attributes=_producer_attributes(stream, envelope),
        )
        carrier: dict[str, str] = {}
        _propagator.inject(carrier, trace.set_span_in_context(one))
        out.spans.append(one)
        out.envelopes.append(envelope.model_copy(update=carrier))
    try:
        yield out
    except BaseException as exc:
        for one in out.spans:
            record_failure(one, exc)
        raise
    finally:
        for one in out.spans:
            one.end()


def _producer_attributes(stream: str, envelope: Envelope) -> dict[str, Any]:
    return {
        "messaging.system": SYSTEM,
        "messaging.destination.name": stream,
        "messaging.operation.name": "send",
        "messaging.operation.type": "send",
        "streamdesk.event.type": envelope.type,
        "streamdesk.event.hash": event_hash(envelope),
    }


@contextlib.contextmanager
def span(name: str, attributes: Mapping[str, Any] | None = None) -> Iterator[Any]:
    """An INTERNAL span around a block (a ctx.step, a model or tool call); yields it, or
    None with tracing off."""
    if not ACTIVE:
        yield None
        return
    with started(_tracer, name, attributes=attributes) as one:
        yield one


def wrap(fn: Any, name: str, attributes: Mapping[str, Any] | None = None) -> Any:
    """``fn`` called inside a span of its own (a tool, run as a durable step: replayed
    steps do not call it, so they get no span); ``fn`` itself with tracing off."""
    if not ACTIVE:
        return fn
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def traced_async(*args: Any, **kwargs: Any) -> Any:
            with span(name, attributes):
                return await fn(*args, **kwargs)

        return traced_async

    @functools.wraps(fn)
    def traced(*args: Any, **kwargs: Any) -> Any:
        with span(name, attributes):
            return fn(*args, **kwargs)

    return traced


@contextlib.contextmanager
def server_span(
    name: str, headers: Mapping[str, str], attributes: Mapping[str, Any]
) -> Iterator[Any]:
    """A SERVER span for an incoming request; a sender's own ``traceparent`` header is its
    parent when no span is current (behind Django's instrumentation, that one is)."""
    if not ACTIVE:
        yield None
        return
    from opentelemetry import trace

    parent = None
    if TRACEPARENT in headers and not trace.get_current_span().get_span_context().is_valid:
        parent = _propagator.extract(headers)
    kind = trace.SpanKind.SERVER
    with started(_tracer, name, parent, kind, attributes=attributes) as one:
        yield one


# -- consumers --------------------------------------------------------------------------


class AttemptTrace:
    """One attempt's spans: a CONSUMER ``process <stream>`` span, the child of the context
    the envelope carries (OpenTelemetry's messaging conventions let a single message's
    process span be the creation context's child, which keeps an event and all its attempts
    in one trace), with the gate, the agent and the settle as its children.

    An attempt its sampler dropped gets no child spans (a parent-based sampler drops them too;
    at 1% they cost the other 99% three sampling decisions each), but its context is current
    while the agent runs, so what it publishes carries the "not sampled" decision on."""

    __slots__ = ("agent_ended_ns", "context", "error", "gate_ns", "open", "recording", "span")

    def __init__(
        self,
        envelope: Envelope,
        attributes: dict[str, Any],
        gate_ns: tuple[int, int],
    ) -> None:
        from opentelemetry import trace
        from opentelemetry.context import Context

        extra = envelope.model_extra or {}
        carrier = {k: str(extra[k]) for k in (TRACEPARENT, TRACESTATE) if k in extra}
        # An empty context, not the current one: nothing in the worker's task is a parent.
        parent = _propagator.extract(carrier, Context())
        stream = attributes.get("messaging.destination.name", "")
        began_ns = gate_ns[0]
        self.span = _tracer.start_span(
            f"process {stream}",
            parent,
            trace.SpanKind.CONSUMER,
            attributes=attributes,
            start_time=began_ns or None,
        )
        self.context = trace.set_span_in_context(self.span, parent)
        self.recording = self.span.is_recording()
        self.agent_ended_ns = 0
        self.error = ""
        self.open = True
        self.gate_ns = gate_ns

    def trace_id(self) -> str:
        return format(self.span.get_span_context().trace_id, "032x")

    @contextlib.contextmanager
    def running(self, event_type: str) -> Iterator[None]:
        """The agent's span, current (with the consumer span as its parent) while it runs."""
        from opentelemetry import context, trace

        token = context.attach(self.context)
        try:
            if not self.recording:
                yield
                return
            with _tracer.start_as_current_span(
                f"agent {event_type}", record_exception=False, set_status_on_exception=False
            ) as agent:
                try:
                    yield
                except Deferred as exc:
                    # Waiting for a rate budget is not a failure.
                    agent.set_attribute("streamdesk.deferred_ms", exc.wait_ms)
                    raise
                except BaseException as exc:
                    record_exception(agent, exc)
                    self.error = type(exc).__name__
                    agent.set_status(trace.StatusCode.ERROR, self.error)
                    if isinstance(exc, asyncio.CancelledError):
                        # Cancelled at shutdown: this worker will not settle it, so the
                        # attempt's span ends here; its redelivery is a new span.
                        self._end()
                    raise
        finally:
            self.agent_ended_ns = time.time_ns()
            context.detach(token)

    def settled(self) -> None:
        """The attempt's outcome is stored: its settle span, then the end of its own."""
        if not self.open:
            return
        if not self.recording:
            self.open = False
            return
        settle = _tracer.start_span("settle", self.context, start_time=self.agent_ended_ns or None)
        settle.end()
        self._end()

    def _end(self) -> None:
        from opentelemetry import trace

        began_ns, gated_ns = self.gate_ns
        if began_ns:
            # The gate ran once for the whole batch: each attempt's span gets its timing. Ended
            # only now, with its parent, so a worker killed mid-agent exports no gate span
            # whose parent never arrives.
            gate = _tracer.start_span("gate", self.context, start_time=began_ns)
            gate.end(end_time=gated_ns)
        if self.error:
            self.span.set_status(trace.StatusCode.ERROR, self.error)
        self.open = False
        self.span.end()
