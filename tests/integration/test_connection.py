"""The worker's asyncio client packs commands with hiredis (the same bytes, the same replies)
and writes them at once (a write that must wait is still bounded by the socket timeout)."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import pytest
import redis
import redis.asyncio as aredis
from redis.connection import PythonRespSerializer

from workers.redis.connection import DirectWrites, HiredisPacking, aconnect, pack_with_hiredis

ARGS: list[tuple[Any, ...]] = [
    ("EVALSHA", "0" * 40, 2, "streamdesk:idem:é☃", "k2", 30_000, 1.5, "host/1-0"),
    ("CONFIG GET", "maxmemory"),  # a two-word command name is split, as redis-py does
    (b"XACK", b"stream", b"group", b"\xff\x00raw"),
    ("SET", "key", "x" * 100_000),  # over redis-py's buffer cutoff
]


def python_packing(*args: Any) -> bytes:
    encoder = aredis.Redis().get_encoder()
    return b"".join(PythonRespSerializer(6000, encoder.encode).pack(*args))


def test_packs_the_same_bytes_as_redis_py(redis_url: str) -> None:
    async def packed() -> list[bytes]:
        client = await aconnect(redis_url)
        try:
            conn = client.connection_pool.make_connection()
            assert isinstance(conn, HiredisPacking)
            return [b"".join(conn.pack_command(*args)) for args in ARGS]
        finally:
            await client.aclose()

    assert asyncio.run(packed()) == [python_packing(*args) for args in ARGS]


def test_replies_round_trip_through_a_pipeline(redis_url: str) -> None:
    async def run() -> tuple[list[Any], dict[str, str]]:
        client = await aconnect(redis_url)
        try:
            async with client.pipeline(transaction=False) as pipe:
                for i in range(1_000):
                    pipe.hset("streamdesk:test:packing", f"f{i}", f"é{i}")
                pipe.hincrby("streamdesk:test:packing", "n", 7)
                replies = await pipe.execute()
            stored = await client.hgetall("streamdesk:test:packing")
            await client.delete("streamdesk:test:packing")
            return replies, stored
        finally:
            await client.aclose()

    replies, stored = asyncio.run(run())
    assert replies == [1] * 1_000 + [7]
    assert stored["f999"] == "é999" and stored["n"] == "7" and len(stored) == 1_001


def test_the_urls_connection_class_is_kept() -> None:
    unix = pack_with_hiredis(aredis.Redis.from_url("unix:///tmp/streamdesk-none.sock"))
    tls = pack_with_hiredis(aredis.Redis.from_url("rediss://127.0.0.1:6390/0"))
    assert issubclass(unix.connection_pool.connection_class, aredis.UnixDomainSocketConnection)
    assert issubclass(tls.connection_pool.connection_class, aredis.SSLConnection)
    for client in (unix, tls):
        assert issubclass(client.connection_pool.connection_class, HiredisPacking)
        # Applying it twice does not stack subclasses.
        cls = client.connection_pool.connection_class
        assert pack_with_hiredis(client).connection_pool.connection_class is cls


def test_a_write_bigger_than_the_socket_buffer_waits_for_it(redis_url: str) -> None:
    async def run() -> int:
        client = await aconnect(redis_url, socket_timeout=10)
        try:
            await client.set("streamdesk:test:big", "x" * 20_000_000)
            return int(await client.strlen("streamdesk:test:big"))
        finally:
            await client.delete("streamdesk:test:big")
            await client.aclose()

    assert asyncio.run(run()) == 20_000_000


def test_a_write_the_server_never_reads_times_out_and_drops_the_connection() -> None:
    """A peer that accepts and never reads: the write fills the socket's buffers and must
    end with redis-py's TimeoutError after socket_timeout, not hang."""
    with socket.socket() as deaf:
        deaf.bind(("127.0.0.1", 0))
        deaf.listen()
        port = deaf.getsockname()[1]

        async def run() -> tuple[type[BaseException], bool]:
            client = pack_with_hiredis(
                # No handshake (CLIENT SETINFO) to wait on: the deaf peer would never answer.
                aredis.Redis.from_url(
                    f"redis://127.0.0.1:{port}/0",
                    socket_timeout=0.5,
                    lib_name=None,
                    lib_version=None,
                )
            )
            conn = client.connection_pool.make_connection()
            assert isinstance(conn, DirectWrites)
            await conn.connect()
            started = time.monotonic()
            with pytest.raises(redis.TimeoutError) as raised:
                await conn.send_command("SET", "k", "x" * 50_000_000)
            assert time.monotonic() - started < 5
            return raised.type, conn.is_connected

        kind, connected = asyncio.run(run())
    assert kind is redis.TimeoutError and not connected
