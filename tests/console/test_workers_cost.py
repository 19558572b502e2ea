"""The workers page says what the workers cost Redis beside the table: "measuring" until a
second reading, then the commands/s of the connections named as workers' (or, on a server
without per-connection counts, the server's own total, said to be every client's), "at
rest" only while no worker has an event in flight."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from django.test import Client

from console.live.fleet_cost import meter_for
from console.live.realtime import workers_key
from console.live.ticker import make_sampler
from console.runtime import keys, redis_client
from tests.support.console import text
from workers import from_settings
from workers.redis.client_names import worker_client_name
from workers.redis.connection import connect

pytestmark = pytest.mark.serial  # counts the whole server's commands or clients

STREAM = "streamdesk:events"


@pytest.fixture(autouse=True)
def fresh_meter(redis_url: str) -> Iterator[None]:
    """A console client of its own, so its meter has no reading from another test."""
    from_settings._client.cache_clear()
    yield
    from_settings._client.cache_clear()


def heartbeat(r: redis.Redis, consumer: str, inflight: int) -> None:
    now_ms = int(r.time()[0]) * 1000
    key = f"streamdesk:workers:{consumer}"
    r.hset(
        key,
        mapping={
            "consumer": consumer,
            "host": "box",
            "pid": "42",
            "state": "running",
            "started_ms": str(now_ms - 5_000),
            "processed": "0",
            "concurrency": "4",
            "stream": STREAM,
            "group": "agents",
            "inflight": str(inflight),
        },
    )
    r.expire(key, 30)
    r.zadd("streamdesk:workers", {consumer: now_ms})


def per_connection(r: redis.Redis) -> bool:
    return "tot-cmds" in r.client_list()[0]


def two_readings(r: redis.Redis, staff_client: Client, redis_url: str) -> str:
    """The page after a window in which a worker's connection sent 40 commands."""
    meter_for(redis_client()).read_every_s = 0  # every render reads
    worker = connect(redis_url, client_name=worker_client_name("w-1"))
    try:
        worker.ping()
        staff_client.get("/workers/")
        for _ in range(40):
            worker.ping()
        return text(staff_client.get("/workers/"))
    finally:
        worker.close()


def test_workers_page_says_measuring_before_a_second_reading(
    r: redis.Redis, staff_client: Client
) -> None:
    heartbeat(r, "w-1", 0)
    body = text(staff_client.get("/workers/"))
    assert 'data-metric="fleet-cost"' in body
    assert "What the workers cost Redis: measuring…" in body
    assert "commands/s</strong>" not in body


def test_workers_page_says_what_the_workers_cost_at_rest(
    r: redis.Redis, staff_client: Client, redis_url: str
) -> None:
    heartbeat(r, "w-1", 0)
    body = two_readings(r, staff_client, redis_url)
    assert 'data-metric="fleet-commands-s"' in body
    assert "docs/benchmarks.md</code> (Idle workers)" in body
    if per_connection(r):
        assert "At rest the workers cost Redis" in body
        assert "<code>tot-cmds</code> in <code>CLIENT LIST</code> of their" in body
    else:
        assert "from all its clients, the console's own included" in body
        assert "the workers' share cannot be told apart" in body


def test_workers_page_busy_workers_are_not_at_rest(
    r: redis.Redis, staff_client: Client, redis_url: str
) -> None:
    if not per_connection(r):
        pytest.skip("the server's total has no 'at rest' wording (Redis 7.0)")
    heartbeat(r, "w-1", 1)
    body = two_readings(r, staff_client, redis_url)
    assert "The workers send Redis" in body
    assert "At rest" not in body


@pytest.mark.django_db
def test_workers_fragment_carries_the_cost(r: redis.Redis) -> None:
    heartbeat(r, "w-1", 0)
    r.delete("streamdesk:console:broadcaster")
    tick = make_sampler().tick()
    assert tick is not None
    assert 'data-metric="fleet-cost"' in tick.fragments[workers_key()]


@pytest.mark.parametrize(
    ("holder", "said"),
    [
        ("runworker:vm:12:ab12cd", "counted here: a worker holds it"),
        ("console:vm:13:ef34ab", "not counted here: the console holds it"),
    ],
)
def test_workers_page_says_who_records_the_history(
    r: redis.Redis, staff_client: Client, redis_url: str, holder: str, said: str
) -> None:
    """The recorder is most of an idle fleet's traffic: the line says whether it is counted."""
    heartbeat(r, "w-1", 0)
    r.set(keys().history_recorder, holder, px=60_000)
    body = two_readings(r, staff_client, redis_url)
    assert said in body
