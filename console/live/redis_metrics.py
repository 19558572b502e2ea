"""The Redis page's figures for Prometheus, in the console's ``GET /metrics``: used memory,
``maxmemory`` and keys evicted, per node. From the panel's reading (``redis_panel.py``): a
scrape reads the server only when that reading is 10 s old, so a scrape every 15 s costs
one ``INFO`` and one ``SLOWLOG GET``. ``manage.py metrics`` (the engine's exporter) does not
serve them: use a Redis exporter beside it."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator

import redis
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from console.live.redis_panel import RedisReading, meter_for
from workers.core.keys import Keys

log = logging.getLogger("streamdesk.metrics")
NODE = ["node"]  # "" for a single server, "host:port" for a cluster's nodes


def redis_families(reading: RedisReading) -> Iterator[Metric]:
    used = GaugeMetricFamily(
        "streamdesk_redis_used_memory_bytes",
        "Memory the server uses (INFO used_memory).",
        labels=NODE,
    )
    limit = GaugeMetricFamily(
        "streamdesk_redis_maxmemory_bytes", "The server's maxmemory; 0 is no limit.", labels=NODE
    )
    evicted = CounterMetricFamily(
        "streamdesk_redis_evicted_keys", "Keys evicted since the server started.", labels=NODE
    )
    for node in reading.nodes:
        if node.info is not None:  # INFO refused on this node: no series for it
            used.add_metric([node.node], node.info.used_memory)
            limit.add_metric([node.node], node.info.maxmemory)
            evicted.add_metric([node.node], node.info.evicted_keys)
    yield from (used, limit, evicted)


class RedisCollector(Collector):
    """Reads (or reuses) the panel's reading on every scrape; none while Redis is down."""

    def __init__(self, read: Callable[[], RedisReading]) -> None:
        self.read = read

    def collect(self) -> Iterator[Metric]:
        try:
            reading = self.read()
        except redis.RedisError as exc:  # streamdesk_up says Redis is down; nothing here
            log.warning("metrics: Redis itself cannot be read: %s", exc)
            return
        yield from redis_families(reading)


def exposition_of(read: Callable[[], RedisReading]) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(RedisCollector(read))
    return generate_latest(registry)


def redis_exposition(client: redis.Redis, keys: Keys) -> bytes:
    """The gauges from this process's reading of ``client``'s server (10 s old at most)."""
    meter = meter_for(client)
    return exposition_of(lambda: meter.current(client, keys, int(time.time() * 1000)))
