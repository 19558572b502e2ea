"""Running one worker process: connect, install signal handlers, run until stopped."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Collection, Coroutine, Mapping, Sequence
from typing import Any, cast

from redis.asyncio import Redis

from workers.core import tracing
from workers.core.config import EngineConfig
from workers.core.logs import flush_repeats
from workers.core.registry import Registry
from workers.engine.slots import Slots
from workers.engine.worker import Worker
from workers.fanout import ensure_groups, lineup, select
from workers.redis.client_names import worker_client_name
from workers.redis.connection import aconnect, check_version, is_cluster
from workers.redis.listener import Handler, Listener
from workers.runtime.llm.config import LLMConfig
from workers.runtime.ratelimit import Budget
from workers.store.dbwriter import DbWriter
from workers.store.protocols import RunStore

log = logging.getLogger("streamdesk.worker")
YOUNG_GC_THRESHOLD = 20_000
# At the end of the process: how long threads get to finish before the process exits
# without them, and how long tasks still pending get to end once cancelled.
THREAD_GRACE_S = 1.0
CANCEL_WAIT_S = 1.0


async def serve(
    config: EngineConfig,
    url: str,
    registry: Registry,
    store: RunStore,
    budgets: dict[str, Budget] | None = None,
    llm: LLMConfig | None = None,
    channels: Mapping[str, Handler] | None = None,
    agents: Sequence[str] = (),
) -> None:
    """Run the worker until stopped. ``channels``: more handlers for the process's pub/sub
    listener (the timer's, from runworker), so the process still holds one subscription.
    ``agents``: the names ``runworker --agent`` gave (none: every agent)."""
    # Read timeouts must outlast XREADGROUP BLOCK. Bytes that are not UTF-8 stay lone
    # surrogates, never U+FFFD: the entry is a decode-error (its dead letter shows them as
    # escapes, \udcff for 0xFF), not an event that hashes as another one. Every connection
    # of this client's pool (the gate's, the pub/sub listener's) carries the worker's name,
    # so the console can tell the fleet's commands apart in CLIENT LIST.
    client = await aconnect(
        url,
        encoding_errors="surrogateescape",
        socket_timeout=config.block_ms / 1000 + 10,
        health_check_interval=30,
        client_name=worker_client_name(config.consumer),
    )
    label = check_version(await server_info(client))
    # Everything loaded so far (Django, the agents) lives as long as the process: keep it
    # out of the garbage collector's full passes, which otherwise pause the loop for ms.
    gc.collect()
    gc.freeze()
    # Each event allocates a few hundred objects; collecting the young generation every 700
    # allocations (the default) cost about 6% of the loop's CPU at full speed.
    gc.set_threshold(YOUNG_GC_THRESHOLD, *gc.get_threshold()[1:])
    # The standard OTEL_* variables switch traces on (docs/observability.md).
    tracing.configure()
    cluster = is_cluster(client)
    await create_groups(client, config, registry, agents, cluster)
    workers = partition_workers(
        config, client, registry, store, budgets, llm, cluster, channels, agents
    )
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop_all, workers)
    log.info(
        "worker %s reading %s as group%s %s on %s (concurrency %d, %d agents)",
        config.consumer,
        describe_streams(config),
        "s" if len({w.config.group for w in workers}) > 1 else "",
        ", ".join(dict.fromkeys(w.config.group for w in workers)),
        label,
        config.concurrency,
        len([s for s in registry if not s.placeholder]),
    )
    try:
        await run_all(workers)
    finally:
        await client.aclose()
    processed = sum(worker.processed for worker in workers)
    log.info("worker %s stopped after %d events", config.consumer, processed)
    log_abandoned(workers)
    flush_repeats()  # failures counted in this minute: reported before the process ends


def partition_workers(
    config: EngineConfig,
    client: Redis,
    registry: Registry,
    store: RunStore,
    budgets: dict[str, Budget] | None = None,
    llm: LLMConfig | None = None,
    cluster: bool = False,
    channels: Mapping[str, Handler] | None = None,
    agents: Sequence[str] = (),
) -> list[Worker]:
    """One loop per group per partition stream (one stream when unpartitioned; the home
    group and one per named agent, ``workers/fanout``), each its own consumer, all on one
    connection pool, one pub/sub subscription and in one event loop. On a ``cluster`` even
    one partition has a tagged name: its gate records must share its slot."""
    loops = lineup(config.per_partition(tagged=cluster), registry, agents)
    slots = Slots(config.concurrency)
    listener = Listener(client)
    for channel, handler in (channels or {}).items():
        listener.register(channel, handler)
    db = DbWriter(store)
    return [
        Worker(loop.config, client, loop.registry, store, budgets, llm, slots, listener, db)
        for loop in loops
    ]


async def create_groups(
    client: Redis, config: EngineConfig, registry: Registry, agents: Sequence[str], cluster: bool
) -> None:
    """Before any loop reads: the home group (if read here) first, then every named agent's
    group, run here or not, so an agent whose workers start later misses nothing."""
    with_home, _ = select(registry, agents)
    named = [spec.group(config.group) for spec in registry.named()]
    for stream in config.layout(cluster).streams:
        created = await ensure_groups(client, stream, config.group, named, with_home)
        if created:
            log.info("created group(s) %s on %s", ", ".join(created), stream)


def log_abandoned(workers: list[Worker]) -> None:
    """Name the entries whose agents were still running at the drain timeout: their leases
    were released and they stay pending, for another worker (an agent's thread may still
    be running them here: ``exit_past_lingering_threads`` then ends the process)."""
    ids = [i for worker in workers for a in worker.inflight.values() for i in a.entry_ids]
    if ids:
        shown = ", ".join(ids[:20]) + (f" and {len(ids) - 20} more" if len(ids) > 20 else "")
        log.warning("unfinished at the drain timeout, left pending: %s", shown)


def stop_all(workers: list[Worker]) -> None:
    for worker in workers:
        worker.request_stop()


async def run_all(workers: list[Worker]) -> None:
    """Run every partition's loop; should one fail, the others drain and stop too."""
    tasks = [asyncio.create_task(worker.run()) for worker in workers]
    try:
        await asyncio.gather(*tasks)
    finally:
        stop_all(workers)
        await asyncio.gather(*tasks, return_exceptions=True)


async def server_info(client: Redis) -> dict[str, Any]:
    """INFO server of one node (a cluster client would ask every node)."""
    if is_cluster(client):
        return cast(dict[str, Any], await client.info("server", target_nodes="random"))
    return cast(dict[str, Any], await client.info("server"))


def describe_streams(config: EngineConfig) -> str:
    streams = config.layout().streams
    if len(streams) == 1:
        return streams[0]
    return f"{config.stream} in {len(streams)} partitions ({streams[0]} ... {streams[-1]})"


def run(main: Coroutine[Any, Any, None]) -> None:
    """``asyncio.run(main)``, except that nothing left behind is waited for without end: the
    loop's default executor is shut down without waiting (a thread an agent started with
    ``asyncio.to_thread`` that never returns would hold ``asyncio.run`` forever on Python
    3.11), and tasks still pending get ``CANCEL_WAIT_S`` to end once cancelled."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        loop.run_until_complete(main)
    finally:
        try:
            tasks = asyncio.all_tasks(loop)
            for task in tasks:
                task.cancel()
            if tasks:
                loop.run_until_complete(asyncio.wait(tasks, timeout=CANCEL_WAIT_S))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def exit_past_lingering_threads(
    failure: BaseException | None = None,
    older: Collection[threading.Thread] = (),
    grace_s: float = THREAD_GRACE_S,
) -> None:
    """End the process now if threads outlive the worker: an agent's thread still running
    past the drain timeout (a sync agent that never returns) would be joined at interpreter
    exit, for ever, the process holding on with nothing to do. Its event's lease was
    released at the drain timeout and its entry stays pending, so another worker runs it:
    nothing is lost by not waiting. Exits 0, or 1 with ``failure`` (the error the process
    is ending with) logged; returns when no thread lingers. Threads in ``older`` (alive
    before the worker started: not its own) are left alone."""
    lingering = lingering_threads(grace_s, older)
    if not lingering:
        return
    if failure is not None:
        log.error("the worker failed: %s", failure, exc_info=failure)
    log.warning(
        "%d threads still running past the drain timeout (their events were released for "
        "redelivery): exiting without them (%s)",
        len(lingering),
        ", ".join(t.name for t in lingering),
    )
    # os._exit skips the interpreter's exit, which would flush the log handlers and streams.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0 if failure is None else 1)


def lingering_threads(
    grace_s: float, older: Collection[threading.Thread] = ()
) -> list[threading.Thread]:
    """Threads the interpreter's exit would wait for, not in ``older``, still alive after
    ``grace_s`` (idle pool threads are ending on their own: they get the grace)."""
    deadline = time.monotonic() + grace_s
    others = [
        t
        for t in threading.enumerate()
        if t is not threading.current_thread() and not t.daemon and t not in older
    ]
    for thread in others:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [t for t in others if t.is_alive()]
