"""Calling an agent: its context for one attempt; async agents on the loop, sync ones in the
worker's thread pool, each with its context set for the tools it calls (``rate_limited``,
``current_context``)."""

from __future__ import annotations

import asyncio
import contextvars
import functools
from concurrent.futures import Executor
from typing import Any

from workers.core.config import EngineConfig
from workers.core.events import Event
from workers.core.registry import AgentSpec
from workers.engine.attempts import Attempt
from workers.runtime.context import AgentContext, Services, SyncAgentContext


def context_for(services: Services, config: EngineConfig, attempt: Attempt) -> AgentContext:
    return AgentContext(
        services,
        consumer=config.consumer,
        stream=config.stream,
        group=config.group,
        event_type=attempt.runnable.event.type,
        event_hash=attempt.event_hash,
        token=attempt.token,
        deliveries=attempt.delivery.deliveries,
        lease=attempt.lease,
    )


async def invoke(spec: AgentSpec, event: Event[Any], ctx: AgentContext, executor: Executor) -> Any:
    token = ctx.enter()
    try:
        if spec.is_async:
            return await spec.handler(event, ctx)
        call = functools.partial(
            contextvars.copy_context().run, spec.handler, event, SyncAgentContext(ctx)
        )
        return await asyncio.get_running_loop().run_in_executor(executor, call)
    finally:
        ctx.reset(token)
