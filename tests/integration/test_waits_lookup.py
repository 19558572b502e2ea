"""The lookup of the waits a batch answers runs beside its agents, not before them: no entry
is acked until it is done, and none while it fails, so that a redelivery looks again."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
import redis
import redis.asyncio as aredis

from tests.support.engine import STREAM, AnyData, pending, run_burst, xadd
from workers.core.config import EngineConfig
from workers.core.keys import Keys
from workers.core.registry import Registry
from workers.engine.worker import Worker
from workers.models import AgentRun, RunStatus
from workers.store.runs import DjangoRunStore

pytestmark = pytest.mark.django_db(transaction=True)
KEYS = Keys()


async def _until(condition: Callable[[], bool], what: str, timeout_s: float = 20) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def test_an_entry_is_not_acked_while_its_answer_lookup_fails(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """The lookup fails (the type's shapes key holds a string: WRONGTYPE): the agent runs
    and its result is kept, but its entry stays pending; once the lookup works again, the
    reclaimed entry is a duplicate, acked without a second run."""
    runs: Counter[str] = Counter()

    async def agent(event: Any, ctx: Any) -> str:
        runs[event.hash] += 1
        return "done"

    registry = Registry()
    registry.register("test.lookup", AnyData, agent)
    broken = KEYS.wait_shapes(STREAM, "test.lookup")
    r.set(broken, "not a hash")
    xadd(r, {"type": "test.lookup", "source": "t", "id": "l1", "data": {}})

    async def go() -> None:
        client = aredis.Redis.from_url(redis_url, decode_responses=True)
        worker = Worker(replace(config, burst=False), client, registry, DjangoRunStore())
        running = asyncio.create_task(worker.run())
        try:
            settled = lambda: sum(runs.values()) == 1 and not worker.inflight  # noqa: E731
            await _until(lambda: settled() and worker.settler.idle, "the run to be settled")
            await asyncio.sleep(0.3)
            assert pending(r) == 1  # kept for a redelivery: its answers were never looked up
            r.delete(broken)
            await _until(lambda: pending(r) == 0, "the redelivered entry acked")
        finally:
            worker.stopping.set()
            await asyncio.wait_for(running, 10)
            await client.aclose()

    asyncio.run(go())
    assert list(runs.values()) == [1]
    run = AgentRun.objects.get()
    assert (run.status, run.attempts, run.result) == (RunStatus.SUCCEEDED, 1, "done")


def test_a_batch_no_wait_could_answer_sends_no_command_for_waits(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """Standalone, the shapes of the batch's types ride the gate's script call: with no wait
    anywhere, the waits send no command of their own (MONITOR: no HKEYS outside a script)."""
    registry = Registry()
    registry.register("test.lookup", AnyData, lambda event, ctx: None)
    for n in range(20):
        xadd(r, {"type": "test.lookup", "source": "t", "id": f"n{n}", "data": {}})
    seen: list[str] = []
    watching = threading.Event()

    def watch() -> None:
        with redis.Redis.from_url(redis_url, decode_responses=True).monitor() as monitor:
            watching.set()
            for command in monitor.listen():
                seen.append(f"{command['client_type']} {command['command']}")
                if command["command"].startswith("SET streamdesk-test:monitor-done"):
                    return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    assert watching.wait(5)
    run_burst(redis_url, config, registry)
    r.set("streamdesk-test:monitor-done", 1)
    watcher.join(10)
    assert pending(r) == 0 and AgentRun.objects.count() == 20
    assert any(line.startswith("lua HKEYS") for line in seen)  # in the gate's call
    assert not [line for line in seen if "HKEYS" in line and not line.startswith("lua")]
