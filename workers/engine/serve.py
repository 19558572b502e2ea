"""Running one worker process: connect, install signal handlers, run until stopped."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal

from workers.core import tracing
from workers.core.config import EngineConfig
from workers.core.registry import Registry
from workers.engine.worker import Worker
from workers.redis.connection import aconnect, check_version
from workers.runtime.llm.config import LLMConfig
from workers.runtime.ratelimit import Budget
from workers.store.protocols import RunStore

log = logging.getLogger("streamdesk.worker")
YOUNG_GC_THRESHOLD = 20_000


async def serve(
    config: EngineConfig,
    url: str,
    registry: Registry,
    store: RunStore,
    budgets: dict[str, Budget] | None = None,
    llm: LLMConfig | None = None,
) -> None:
    # Read timeouts must outlast XREADGROUP BLOCK.
    client = await aconnect(
        url,
        encoding_errors="replace",
        socket_timeout=config.block_ms / 1000 + 10,
        health_check_interval=30,
    )
    label = check_version(await client.info("server"))
    # Everything loaded so far (Django, the agents) lives as long as the process: keep it
    # out of the garbage collector's full passes, which otherwise pause the loop for ms.
    gc.collect()
    gc.freeze()
    # Each event allocates a few hundred objects; collecting the young generation every 700
    # allocations (the default) cost about 6% of the loop's CPU at full speed.
    gc.set_threshold(YOUNG_GC_THRESHOLD, *gc.get_threshold()[1:])
    # The standard OTEL_* variables switch traces on (docs/observability.md).
    tracing.configure()
    worker = Worker(config, client, registry, store, budgets, llm)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, worker.request_stop)
    log.info(
        "worker %s reading %s as group %s on %s (concurrency %d, %d agent types)",
        config.consumer,
        config.stream,
        config.group,
        label,
        config.concurrency,
        len(list(registry)),
    )
    try:
        await worker.run()
    finally:
        await client.aclose()
    log.info("worker %s stopped after %d events", config.consumer, worker.processed)
