"""Whatever an agent raises is its own failure (issue 26): ``SystemExit`` from a library's
``sys.exit()``, ``KeyboardInterrupt``, ``GeneratorExit``, a ``CancelledError`` let out of a
helper task, any ``BaseException``. The worker keeps going, the good events of the same batch
run once, the raising one is retried and dead-lettered, and a burst run ends."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
import redis

from tests.support.engine import STREAM, AnyData, counters, pending, run_burst, xadd
from workers.core.config import EngineConfig
from workers.core.registry import Registry
from workers.models import AgentRun, RunStatus

pytestmark = pytest.mark.django_db(transaction=True)


class Custom(BaseException):
    """A library's own BaseException subclass."""


RAISES: dict[str, Callable[[], BaseException]] = {
    "SystemExit": lambda: SystemExit(3),
    "KeyboardInterrupt": KeyboardInterrupt,
    "GeneratorExit": GeneratorExit,
    "CancelledError": asyncio.CancelledError,
    "Custom": lambda: Custom("mine"),
    "BaseExceptionGroup": lambda: BaseExceptionGroup("both", [KeyboardInterrupt(), ValueError()]),
}
GOOD = [f"g{i}" for i in range(6)]


def raising(make: Callable[[], BaseException], sync: bool, runs: list[str]) -> Registry:
    """An agent that raises ``make()`` for the event ``bad`` and returns for the rest."""
    registry = Registry()

    def body(event: Any) -> str:
        runs.append(event.id)
        if event.id == "bad":
            raise make()
        return str(event.id)

    async def async_agent(event: Any, ctx: Any) -> str:
        return body(event)

    def sync_agent(event: Any, ctx: Any) -> str:
        return body(event)

    registry.register("test.raise", AnyData, sync_agent if sync else async_agent)
    return registry


def publish(r: redis.Redis, ids: list[str]) -> None:
    for event_id in ids:
        xadd(r, {"type": "test.raise", "source": "t", "id": event_id, "data": {}})


def assert_only_bad_failed(r: redis.Redis, runs: list[str], name: str, max_deliveries: int) -> None:
    assert pending(r) == 0
    assert sorted(runs) == sorted(GOOD + ["bad"] * max_deliveries)  # good ones once each
    rows = {row.event_id: row for row in AgentRun.objects.all()}
    assert {rows[i].status for i in GOOD} == {RunStatus.SUCCEEDED}
    assert rows["bad"].status == RunStatus.DEAD and name in rows["bad"].error
    letters = [fields for _, fields in r.xrange(f"{STREAM}:dead")]
    assert [json.loads(f["event"])["id"] for f in letters] == ["bad"]
    assert letters[0]["reason"] == "max-deliveries" and name in letters[0]["error"]
    assert counters(r)["processed"] == len(GOOD)


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
@pytest.mark.parametrize("name", list(RAISES))
def test_an_agent_raising_a_base_exception_fails_alone(
    r: redis.Redis, redis_url: str, config: EngineConfig, name: str, sync: bool
) -> None:
    runs: list[str] = []
    publish(r, ["bad", *GOOD])  # one batch: the good ones are read beside it

    run_burst(redis_url, config, raising(RAISES[name], sync, runs), timeout_s=30)

    assert_only_bad_failed(r, runs, name, config.max_deliveries)


def test_a_cancelled_helper_task_awaited_by_the_agent_is_its_failure(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """The common bug: cancel a helper task, then await it. The CancelledError reaches the
    agent's task, which nobody cancelled: a failure, settled, not an event in flight forever."""
    registry = Registry()
    runs: list[str] = []

    async def agent(event: Any, ctx: Any) -> str:
        runs.append(event.id)
        if event.id == "bad":
            helper = asyncio.create_task(asyncio.sleep(60))
            await asyncio.sleep(0)
            helper.cancel()
            await helper
        return str(event.id)

    registry.register("test.raise", AnyData, agent)
    publish(r, ["bad", *GOOD])

    run_burst(redis_url, config, registry, timeout_s=30)

    assert_only_bad_failed(r, runs, "CancelledError", config.max_deliveries)
