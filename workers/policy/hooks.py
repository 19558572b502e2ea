"""Agents' ``on_failure`` hooks: called once, by the worker that dead-lettered the event,
after its dead letter is written. Each runs in a task of its own (a sync hook in a thread),
so a slow or failing hook holds neither the settler nor the other events; what it raises
is logged and dropped. At most once: a worker that dies between the dead letter and the
call does not call it, and nothing calls it again."""

from __future__ import annotations

import asyncio
import inspect
import logging
from dataclasses import dataclass
from typing import Any

from workers.core.events import Event
from workers.core.registry import AgentSpec

log = logging.getLogger("streamdesk.worker")


@dataclass(frozen=True, slots=True)
class AgentFailure:
    """What ``on_failure(event, failure)`` is told of its event's end."""

    # max-deliveries, timeout, non-retriable or unstorable (docs/failures.md).
    reason: str
    # The last attempt's error: the exception and its traceback.
    error: str
    deliveries: int
    stream: str
    entry_id: str
    event_hash: str


class FailureHooks:
    def __init__(self) -> None:
        self._running: set[asyncio.Task[None]] = set()

    def dead_lettered(self, spec: AgentSpec, event: Event[Any], reason: str, error: str) -> None:
        hook = spec.declared.on_failure
        if hook is None:
            return
        failure = AgentFailure(
            reason, error, event.deliveries, event.stream, event.entry_id, event.hash
        )
        task = asyncio.create_task(self._call(spec, hook, event, failure), name="on_failure")
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _call(
        self, spec: AgentSpec, hook: Any, event: Event[Any], failure: AgentFailure
    ) -> None:
        try:
            if inspect.iscoroutinefunction(hook):
                await hook(event, failure)
            else:
                await asyncio.to_thread(hook, event, failure)
        except Exception:
            log.exception("the on_failure hook of %s failed", spec.handler_name)
