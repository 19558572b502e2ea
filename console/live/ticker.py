"""This process's one sampler task, started by the first websocket with the bulk-job runner.

Kept apart from ``console.live.sampler`` (what a tick reads and renders): the ticker builds the
sampler from the engine's settings (``console.runtime``), so imports point one way: ticker ->
sampler and ticker -> runtime; the settings glue imports no other module of the console.
"""

from __future__ import annotations

import asyncio
import contextlib

from console.live.background import ensure_job_runner
from console.live.sampler import Sampler
from console.live.tables import tables
from console.runtime import keys, redis_client
from workers.from_settings import engine_config, rate_budgets
from workers.retention import Retention

_task: asyncio.Task[None] | None = None


def make_sampler() -> Sampler:
    config = engine_config()
    return Sampler(
        redis_client(),
        keys(),
        config.claim_idle_ms,
        rate_budgets(),
        Retention.of(config),
        config.group,
    )


def ensure_running() -> None:
    """Start this process's sampler on the running loop, once."""
    global _task
    loop = asyncio.get_running_loop()
    if _task is not None and not _task.done() and _task.get_loop() is loop:
        return
    ensure_job_runner()
    _task = loop.create_task(make_sampler().run(), name="console-sampler")


async def stop() -> None:
    """Cancel the sampler (tests; a daphne process simply exits)."""
    global _task
    task, _task = _task, None
    if task is not None and task.get_loop() is asyncio.get_running_loop():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    await tables.stop()  # the live tables' loop, started beside it (console/consumers.py)
