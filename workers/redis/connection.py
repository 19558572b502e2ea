"""Finding the Redis server: ``REDIS_URL``, or the embedded Valkey; and checking it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

import redis
import redis.asyncio as aredis
from redis.connection import HiredisRespSerializer
from redis.exceptions import RedisClusterException
from redis.utils import HIREDIS_AVAILABLE

from workers.core.errors import RedisTooOld, RedisUnavailable, StreamdeskError
from workers.core.redact import redact_url
from workers.redis.embedded import EmbeddedValkey

MIN_VERSION = (6, 2, 0)
# What a server that cannot be reached raises. A cluster client that finds no node to read
# the slot map from (in a failover, before a replica is promoted) raises the cluster's own
# exception, which is not a RedisError.
UNREACHABLE = (
    redis.ConnectionError,
    redis.TimeoutError,
    RedisClusterException,
    ConnectionError,
    OSError,
)


def resolve_url(redis_url: str, data_dir: Path) -> str:
    """``redis_url`` if set, else the embedded server's URL (started if it is not running)."""
    if redis_url:
        return redis_url
    server = EmbeddedValkey(data_dir)
    server.ensure_running()
    return server.url


def parse_version(text: str) -> tuple[int, int, int]:
    parts = [*text.split("."), "0", "0", "0"][:3]
    try:
        major, minor, patch = (int(p) for p in parts)
    except ValueError:
        return (0, 0, 0)
    return (major, minor, patch)


def server_version(info: dict[str, Any]) -> tuple[str, tuple[int, int, int]]:
    """Valkey reports ``valkey_version`` and, for compatibility, ``redis_version`` 7.2.4."""
    name = "valkey" if "valkey_version" in info else "redis"
    text = str(info.get("valkey_version") or info.get("redis_version") or "0")
    return f"{name} {text}", parse_version(text)


def check_version(info: dict[str, Any]) -> str:
    label, version = server_version(info)
    redis_compat = parse_version(str(info.get("redis_version", "0")))
    if max(version, redis_compat) < MIN_VERSION:
        raise RedisTooOld(
            f"Streamdesk needs Redis >= 6.2 or Valkey (for XAUTOCLAIM); the server is {label}"
        )
    return label


def is_cluster_node(info: dict[str, Any]) -> bool:
    return int(info.get("cluster_enabled", 0)) == 1


def is_cluster(client: object) -> bool:
    """Whether ``client`` is a cluster client (``connect`` returns one for a cluster node)."""
    return isinstance(client, redis.RedisCluster | aredis.RedisCluster)


def connect(url: str, **kwargs: Any) -> redis.Redis:
    """A sync client, checked to reach a recent enough server; a cluster client when
    ``url`` names a node of a cluster."""
    client = redis.Redis.from_url(url, decode_responses=True, **kwargs)
    try:
        check_version(cast(dict[str, Any], client.info("server")))
        cluster = is_cluster_node(cast(dict[str, Any], client.info("cluster")))
    except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
        client.close()
        raise RedisUnavailable(f"cannot reach Redis at {redact_url(url)}: {exc}") from exc
    except StreamdeskError:
        client.close()
        raise
    if not cluster:
        return client
    client.close()
    # The cluster client finds every node from this one and follows MOVED and ASK.
    try:
        cluster_client = redis.RedisCluster.from_url(url, decode_responses=True, **kwargs)  # type: ignore[no-untyped-call]
    except RedisClusterException as exc:
        why = f"cannot read the cluster's slots from {redact_url(url)}: {exc}"
        raise RedisUnavailable(why) from exc
    return cast(redis.Redis, cluster_client)


class HiredisPacking:
    """Commands packed by hiredis (C), as redis-py's sync client does already. The asyncio
    client packs in Python, re-joining its buffer at every argument: for the engine's batch
    scripts (two arguments per event) that was most of what a batch cost to send."""

    encoder: Any

    def pack_command(self, *args: Any) -> list[bytes]:
        try:
            return cast("list[bytes]", _HIREDIS.pack(*args))
        except UnicodeEncodeError:
            # hiredis encodes a str as strict UTF-8. A str this client read with
            # ``surrogateescape`` (bytes that are not UTF-8, in an entry) goes back as the
            # same bytes through the client's own encoder, as redis-py's packer does.
            encoded = [self.encoder.encode(arg) for arg in args]
            return cast("list[bytes]", _HIREDIS.pack(*encoded))


_HIREDIS = HiredisRespSerializer()


class DirectWrites:
    """A command is written at once, and only a write that has to wait for the socket is put
    under the timeout. redis-py wraps every write in ``asyncio.wait_for`` when a socket
    timeout is set: a new task and a trip around the event loop per command, though a write
    only waits when the socket's buffer is full. That trip let other tasks run before the
    gate's request left (see ``Gate``) and cost each command a task."""

    _writer: asyncio.StreamWriter | None
    socket_timeout: float | None
    health_check_interval: int
    next_health_check: float

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        writer = self._writer
        if (
            writer is None
            or writer.transport.is_closing()
            or not isinstance(command, list)
            or (check_health and self._health_check_due())
        ):
            # Connecting, a health check, a str or bytes command: redis-py's own way.
            await cast(Any, super()).send_packed_command(command, check_health)
            return
        writer.writelines(command)
        if writer.transport.get_write_buffer_size() == 0:
            return  # all of it is with the kernel: nothing to wait for
        try:
            async with asyncio.timeout(self.socket_timeout):
                await writer.drain()
        except BaseException as exc:
            # Half a command may be out and the rest is stuck in the buffer: the connection
            # is dropped at once (close() would wait for a buffer that never drains).
            writer.transport.abort()
            await cast(Any, self).disconnect(nowait=True)
            if isinstance(exc, TimeoutError):
                raise redis.TimeoutError("Timeout writing to socket") from None
            if isinstance(exc, OSError):
                raise redis.ConnectionError(f"Error while writing to socket: {exc}") from exc
            raise  # cancelled

    def _health_check_due(self) -> bool:
        interval = self.health_check_interval
        return bool(interval) and asyncio.get_running_loop().time() > self.next_health_check


def pack_with_hiredis(client: aredis.Redis) -> aredis.Redis:
    """Before its first connection: the client's connections pack with hiredis and write
    directly. from_url chose the class for the URL's scheme (TCP, TLS, unix socket); that
    class is kept."""
    pool = client.connection_pool
    cls = pool.connection_class
    mixins = [m for m in (HiredisPacking, DirectWrites) if not issubclass(cls, m)]
    if not HIREDIS_AVAILABLE and HiredisPacking in mixins:
        mixins.remove(HiredisPacking)
    if mixins:
        pool.connection_class = type(f"Engine{cls.__name__}", (*mixins, cls), {})
    return client


async def aconnect(url: str, **kwargs: Any) -> aredis.Redis:
    """``connect``'s asyncio twin: a cluster node gives a cluster client."""
    client = pack_with_hiredis(aredis.Redis.from_url(url, decode_responses=True, **kwargs))
    try:
        check_version(await client.info("server"))
        cluster = is_cluster_node(await client.info("cluster"))
    except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
        await client.aclose()
        raise RedisUnavailable(f"cannot reach Redis at {redact_url(url)}: {exc}") from exc
    except StreamdeskError:
        await client.aclose()
        raise
    if not cluster:
        return client
    await client.aclose()
    node = aredis.RedisCluster.from_url(url, decode_responses=True, **kwargs)
    try:
        await node.initialize()
    except RedisClusterException as exc:
        await node.aclose()
        why = f"cannot read the cluster's slots from {redact_url(url)}: {exc}"
        raise RedisUnavailable(why) from exc
    return cast(aredis.Redis, node)


def own_connection(client: aredis.Redis) -> aredis.Redis:
    """A client on one connection of its own, held (see ``Gate``); a cluster client keeps
    a connection per node already, so it is its own."""
    return client if is_cluster(client) else client.client()
