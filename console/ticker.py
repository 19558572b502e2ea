"""This process's one sampler task, started by the first websocket with the bulk-job runner.

Kept apart from ``console.sampler`` (what a tick reads and renders) and ``console.runtime``
(how the engine's settings build one), so the three import one way: ticker -> runtime ->
sampler.
"""

from __future__ import annotations

import asyncio
import contextlib

from console.background import ensure_job_runner
from console.runtime import make_sampler

_task: asyncio.Task[None] | None = None


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
