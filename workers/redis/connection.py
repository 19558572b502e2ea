"""Finding the Redis server: ``REDIS_URL``, or the embedded Valkey; and checking it."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any, cast
from urllib.parse import SplitResult, urlsplit

import redis
import redis.asyncio as aredis
from redis.connection import HiredisRespSerializer, SSLConnection, parse_url
from redis.exceptions import RedisClusterException
from redis.utils import HIREDIS_AVAILABLE

from workers.core.errors import ConfigurationError, RedisTooOld, RedisUnavailable, StreamdeskError
from workers.core.redact import redact_url
from workers.redis.embedded import EmbeddedValkey

MIN_VERSION = (6, 2, 0)
# Connecting, TLS handshake included, gives up after this: a rediss:// URL pointed at a plain
# port otherwise waits for a server hello that never comes, for ever.
CONNECT_TIMEOUT_S = 5.0
ENCODE_HINT = "percent-encode it: '/' as %2F, '?' as %3F, '#' as %23, '@' as %40"
_DB_PATH = re.compile(r"/?\d*")
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


def check_url(url: str, name: str = "REDIS_URL") -> str:
    """``url`` if redis-py reads it as written, else a ConfigurationError that shows no part
    of it: a password holding '/', '?' or '#' ends the URL's host part early, so what a
    parser takes for the port or the path is the password's start."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # "Invalid IPv6 URL": no part of the URL in the message
        raise ConfigurationError(f"{name}: {exc}") from None
    if parts.scheme not in ("redis", "rediss", "unix"):
        raise ConfigurationError(f"{name} must start with redis://, rediss:// or unix://")
    if password_ends_host(url):
        raise ConfigurationError(unencoded_password(name))
    if parts.scheme != "unix":
        _check_port_and_db(parts, name)
    try:
        parse_url(url)  # type: ignore[no-untyped-call]
    except ValueError as exc:  # redis-py's own messages name the option, not its value
        raise ConfigurationError(f"{name}: {exc}") from None
    return url


def password_ends_host(url: str) -> bool:
    """Whether the URL's user name or password holds '/', '?', '#' or '@' as written: the
    host part then ends early, and an '@' is left after it. A URL with no host part
    (``unix:///a@b.sock``, ``sqlite:///...``) may hold an '@' in its path."""
    _, sep, rest = url.partition("://")
    netloc = urlsplit(url).netloc
    return bool(sep and netloc) and "@" not in netloc and "@" in rest[len(netloc) :]


def unencoded_password(name: str) -> str:
    return (
        f"{name}: its password (or user name) holds '/', '?', '#' or '@', which end a "
        f"URL's host part; {ENCODE_HINT} (the URL is not shown: it holds the password)"
    )


def _check_port_and_db(parts: SplitResult, name: str) -> None:
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        # Not shown: with a '/' in the password, the "port" is the password's start.
        raise ConfigurationError(
            f"{name}: the port is not a number from 1 to 65535 (if the password holds "
            f"'/', '?', '#' or '@', {ENCODE_HINT})"
        )
    # redis-py reads "/x" as database 0, silently, and "/-1" or "/1/2" as -1 and 12.
    if not _DB_PATH.fullmatch(parts.path):
        raise ConfigurationError(f"{name}: the database is not a number (redis://host:port/0)")


def resolve_url(redis_url: str, data_dir: Path) -> str:
    """``redis_url`` if set (checked), else the embedded server's URL (started if it is not
    running)."""
    if redis_url:
        return check_url(redis_url)
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
    kwargs.setdefault("socket_connect_timeout", CONNECT_TIMEOUT_S)
    check_url(url)
    client = bounded_handshake(redis.Redis.from_url(url, decode_responses=True, **kwargs))
    try:
        check_version(cast(dict[str, Any], client.info("server")))
        cluster = is_cluster_node(cast(dict[str, Any], client.info("cluster")))
    except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
        client.close()
        raise RedisUnavailable(unreachable(url, exc)) from exc
    except redis.ResponseError as exc:  # the SELECT of the URL's database, refused
        client.close()
        raise ConfigurationError(f"REDIS_URL: {exc}") from exc
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


def unreachable(url: str, exc: BaseException) -> str:
    why = f"cannot reach Redis at {redact_url(url)}: {exc}"
    if url.startswith("rediss://") and isinstance(exc, redis.TimeoutError | TimeoutError):
        return f"{why} (no TLS handshake: is the port a plain, non-TLS one?)"
    return why


class BoundedHandshakeSSLConnection(SSLConnection):
    """redis-py's sync TLS connection runs its handshake under ``socket_timeout`` (none by
    default), not the connect timeout: against a plain port it waited for ever."""

    def _wrap_socket_with_ssl(self, sock: Any) -> Any:
        sock.settimeout(self.socket_connect_timeout)
        wrapped = super()._wrap_socket_with_ssl(sock)  # type: ignore[no-untyped-call]
        wrapped.settimeout(self.socket_timeout)
        return wrapped


def bounded_handshake(client: redis.Redis) -> redis.Redis:
    pool = client.connection_pool
    if pool.connection_class is SSLConnection:
        pool.connection_class = BoundedHandshakeSSLConnection
    return client


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
    """``connect``'s asyncio twin: a cluster node gives a cluster client. Its connect timeout
    covers the TLS handshake."""
    kwargs.setdefault("socket_connect_timeout", CONNECT_TIMEOUT_S)
    check_url(url)
    client = pack_with_hiredis(aredis.Redis.from_url(url, decode_responses=True, **kwargs))
    try:
        check_version(await client.info("server"))
        cluster = is_cluster_node(await client.info("cluster"))
    except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
        await client.aclose()
        raise RedisUnavailable(unreachable(url, exc)) from exc
    except redis.ResponseError as exc:  # the SELECT of the URL's database, refused
        await client.aclose()
        raise ConfigurationError(f"REDIS_URL: {exc}") from exc
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
