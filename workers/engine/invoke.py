"""Calling an agent: its context for one attempt; async agents on the loop, sync ones in the
worker's thread pool, each with its context set for the tools it calls (``rate_limited``,
``current_context``) and the log lines it writes, and within its timeout
(``workers.policy``). With tracing on, the attempt's spans. Whatever the agent raises
becomes its outcome (``failed``), sorted by its retry policy."""

from __future__ import annotations

import asyncio
import contextvars
import functools
from concurrent.futures import Executor
from typing import Any

from workers.core import tracing
from workers.core.config import EngineConfig
from workers.core.errors import Deferred, Suspended
from workers.core.storable import describe
from workers.engine.attempts import Attempt
from workers.engine.outcomes import Settled
from workers.policy import classify, in_thread, timeout_s_of, within
from workers.runtime.context import AgentContext, Services, SyncAgentContext


def context_for(services: Services, config: EngineConfig, attempt: Attempt) -> AgentContext:
    attempt.ctx = ctx = AgentContext(
        services,
        consumer=config.consumer,
        stream=config.stream,
        group=config.group,
        event_type=attempt.runnable.event.type,
        event_hash=attempt.event_hash,
        token=attempt.token,
        deliveries=attempt.delivery.deliveries,
        lease=attempt.lease,
        entry_id=attempt.delivery.entry_id,
        envelope=attempt.runnable.event.envelope,
    )
    ctx.cancelled = attempt.cancel is not None
    return ctx


def failed(attempt: Attempt, exc: BaseException) -> Settled:
    """Whatever an agent raises is its outcome: ``Deferred`` (a rate budget) reruns it; any
    other class, ``SystemExit`` from a library's sys.exit(), ``KeyboardInterrupt``,
    ``GeneratorExit`` or a CancelledError let out of a helper task, is its failure."""
    if isinstance(exc, Deferred):
        return Settled(attempt, ok=False, error=str(exc), wait_ms=exc.wait_ms)
    if isinstance(exc, Suspended):  # it waits, holding nothing (workers/waits/)
        return Settled(attempt, ok=False, error=exc.waits_for, waits_for=exc.waits_for)
    failure = classify(exc, attempt.runnable.spec.declared.retry)
    if failure.wait_ms is not None:  # a Retry-After: a wait like a budget's, not a delivery
        return Settled(attempt, ok=False, error=describe_short(exc), wait_ms=failure.wait_ms)
    return Settled(attempt, ok=False, error=describe(exc), kind=failure.kind)


def describe_short(exc: BaseException) -> str:
    """The exception's last line (a wait's note on the timeline needs no traceback)."""
    return describe(exc).rstrip().rsplit("\n", 1)[-1]


def cancelled(task: asyncio.Task[Any] | None) -> bool:
    """Was ``task`` itself cancelled, rather than handed a CancelledError by code it awaited?"""
    return task is not None and task.cancelling() > 0


async def invoke(
    attempt: Attempt,
    ctx: AgentContext,
    executor: Executor,
    timeout_s: float = 0.0,
    *,
    traced: bool = True,
) -> Any:
    """Run the agent within its timeout (its own, else ``timeout_s``; 0: none); with tracing
    on, inside the attempt's spans (this function again, ``traced=False``), so tracing off
    costs one boolean and no extra coroutine."""
    spec, event = attempt.runnable.spec, attempt.runnable.event
    if traced and tracing.ACTIVE:
        attempt.trace = tracing.AttemptTrace(
            event.envelope, consumer_attributes(attempt, ctx), gate_ns(attempt)
        )
        with attempt.trace.running(event.type):
            return await invoke(attempt, ctx, executor, timeout_s, traced=False)
    timeout_s = timeout_s_of(spec, timeout_s)
    if ctx.cancelled:  # cancelled before its agent started (workers/cancel/): never starts
        raise asyncio.CancelledError("cancelled before it started")
    token = ctx.enter()
    try:
        if spec.is_async:
            if not timeout_s:
                return await spec.handler(event, ctx)
            return await within(spec.handler(event, ctx), timeout_s)
        call = functools.partial(
            contextvars.copy_context().run, spec.handler, event, SyncAgentContext(ctx)
        )
        attempt.thread = executor.submit(call)
        return await in_thread(attempt.thread, timeout_s)
    finally:
        ctx.reset(token)


def consumer_attributes(attempt: Attempt, ctx: AgentContext) -> dict[str, Any]:
    """OpenTelemetry's messaging attributes, and ours (``streamdesk.*``)."""
    return {
        "messaging.system": tracing.SYSTEM,
        "messaging.destination.name": ctx.stream,
        "messaging.consumer.group.name": ctx.group,
        "messaging.client.id": ctx.consumer,
        "messaging.message.id": attempt.delivery.entry_id,
        "messaging.operation.name": "process",
        "messaging.operation.type": "process",
        "streamdesk.event.hash": attempt.event_hash,
        "streamdesk.event.type": ctx.event_type,
        "streamdesk.delivery_count": attempt.delivery.deliveries,
        "streamdesk.lease.token": attempt.token,
        "streamdesk.takeover": attempt.takeover,
    }


def gate_ns(attempt: Attempt) -> tuple[int, int]:
    """When the batch's gate call began and ended (``started_at`` is taken right after it)."""
    if not attempt.gated_ns:
        return (0, 0)
    return attempt.gated_ns, int(attempt.started_at.timestamp() * 1_000_000_000)
