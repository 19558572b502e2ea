"""Streamdesk's connections carry their names (CLIENT SETNAME in redis-py's handshake), so
the server's CLIENT LIST tells a worker's from the console's: the sync and asyncio clients,
the pub/sub listener's own subscription client, and the shared client of a runworker's threads."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import redis

from workers import from_settings
from workers.redis.client_names import WORKER, worker_client_name
from workers.redis.connection import aconnect, connect
from workers.redis.listener import unbounded

pytestmark = pytest.mark.serial  # counts the whole server's commands or clients

NAME = worker_client_name("names-test")


def names(r: redis.Redis) -> list[str]:
    return [str(c["name"]) for c in r.client_list()]


@pytest.fixture
def worker(redis_url: str) -> Iterator[redis.Redis]:
    client = connect(redis_url, client_name=NAME)
    yield client
    client.close()


def test_connect_names_its_connection(r: redis.Redis, worker: redis.Redis) -> None:
    worker.ping()
    assert NAME in names(r)


def test_aconnect_names_its_connections_and_the_listeners(r: redis.Redis, redis_url: str) -> None:
    async def connected() -> list[str]:
        client = await aconnect(redis_url, client_name=worker_client_name("async-test"))
        watcher = unbounded(client)  # the pub/sub listener's own subscription client
        try:
            await client.ping()
            await watcher.ping()
            return [n for n in names(r) if n == "streamdesk-worker:async-test"]
        finally:
            await watcher.aclose()  # its own pool, closed with it
            await client.aclose()

    assert len(asyncio.run(connected())) == 2


def test_worker_redis_client_is_named_as_a_worker(r: redis.Redis, redis_url: str) -> None:
    from_settings.worker_redis_client().ping()
    assert WORKER in names(r)
