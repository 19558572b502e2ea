"""The Redis page's panel: a reading of the server every ``READ_EVERY_S``, shared by every
browser, and the panel built from it and the sampler's sample.

A reading is, per server (each node of a cluster): ``INFO`` (its default sections) and
``SLOWLOG GET``, plus one range of the recorded history (the streams' lengths over the
growth window), in one pipelined round trip on a single server. They cost the server
little, but not nothing, so, as ``fleet_cost.py`` does with ``CLIENT LIST``, a console
process reads at most once every 10 s, from the broadcasting sampler's tick or a page
render, whichever comes first; the sampler renders the panel once a tick for every open
tab. A command the server refuses (an ACL without ``INFO`` or ``SLOWLOG``) is shown as not
allowed in its place.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import redis
from django.template.loader import render_to_string

from console.live import realtime
from console.live.per_client import PerClient
from console.live.redis_info import (
    NodeInfo,
    PanelWarning,
    SlowEntry,
    node_info,
    node_warnings,
    slow_entries,
)
from console.live.stream_growth import GROWTH_WINDOW_MS, Growth, growth_warnings
from workers.core.keys import Keys
from workers.monitor.history import RESOLUTIONS, Point, Resolution
from workers.monitor.records import StreamInfo
from workers.redis.connection import is_cluster
from workers.retention import Retention

log = logging.getLogger("streamdesk.console")

READ_EVERY_S = 10.0
SLOWLOG_COUNT = 10  # per node; the panel shows the newest SLOWLOG_COUNT over every node


@dataclass(frozen=True, slots=True)
class NodeReading:
    node: str  # "host:port" of a cluster node, "" for a single server
    info: NodeInfo | None
    info_error: str  # why INFO gave nothing ("not allowed: ..."), else ""
    slow: list[SlowEntry]
    slow_error: str


@dataclass(frozen=True, slots=True)
class RedisReading:
    nodes: list[NodeReading]
    points: list[Point]  # the recorded history over the growth window
    history_error: str = ""


@dataclass(frozen=True, slots=True)
class RedisPanel:
    at_ms: int
    nodes: list[NodeReading]
    slowlog: list[SlowEntry]  # newest first, over every node
    warnings: list[PanelWarning]
    growth: list[Growth]
    window_ms: int
    measuring: bool = False  # no reading yet in this process
    cluster: bool = False
    # Recorded points over the window: none, and growth cannot be judged (no recorder ran).
    history_points: int = 0
    history_error: str = ""  # why the history could not be read, else ""

    @property
    def alarms(self) -> list[PanelWarning]:
        """Every warning, the growth ones included: what the overview's line lists."""
        grown = [PanelWarning("warn", f"{g.stream} grows and is not trimmed") for g in self.growth]
        return [*self.warnings, *grown]

    @property
    def level(self) -> str:
        levels = {w.level for w in self.alarms}
        return "bad" if "bad" in levels else "warn" if levels else "ok"


def refused(exc: Exception) -> str:
    """What the panel says in place of a figure the server would not give."""
    if isinstance(exc, redis.exceptions.NoPermissionError) or "NOPERM" in str(exc):
        return f"not allowed: {exc}"
    return f"cannot be read: {exc}"


def resolution_for(window_ms: int) -> Resolution:
    """The coarsest recorded resolution with at least 5 points over the window (a minute
    for 15 minutes), so the growth check reads few points."""
    fits = [r for r in RESOLUTIONS if r.step_ms * 5 <= window_ms <= r.keep_ms]
    return fits[-1] if fits else RESOLUTIONS[0]


def _node(name: str, info: Any, slow: Any) -> NodeReading:
    if isinstance(info, Exception):
        parsed, info_error = None, refused(info)
    else:
        parsed, info_error = node_info(cast(dict[str, Any], info)), ""
    if isinstance(slow, Exception):
        return NodeReading(name, parsed, info_error, [], refused(slow))
    return NodeReading(name, parsed, info_error, slow_entries(slow, name), "")


def _points(raw: Any) -> list[Point]:
    if isinstance(raw, Exception) or not isinstance(raw, list):
        return []
    points = []
    for member in raw:
        try:
            points.append(cast(Point, json.loads(member)))
        except ValueError:
            continue  # a foreign member: not a point
    return points


def _single(client: redis.Redis, keys: Keys, since_ms: int, res: Resolution) -> RedisReading:
    """One pipelined round trip: INFO, SLOWLOG GET and the history range."""
    with client.pipeline(transaction=False) as pipe:
        pipe.info()
        pipe.execute_command("SLOWLOG", "GET", SLOWLOG_COUNT)  # type: ignore[no-untyped-call]
        pipe.zrangebyscore(keys.history(res.name), since_ms, "+inf")
        info, slow, raw = pipe.execute(raise_on_error=False)
    if isinstance(info, redis.ConnectionError | redis.TimeoutError):
        raise info  # the server is gone: the page's 503, the tick's warning
    history_error = refused(raw) if isinstance(raw, Exception) else ""
    return RedisReading([_node("", info, slow)], _points(raw), history_error)


def _call(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except redis.RedisError as exc:  # refused on this node, or the node is down: in its place
        return exc


def _cluster(client: redis.Redis, keys: Keys, since_ms: int, res: Resolution) -> RedisReading:
    """Each node on its own (INFO and SLOWLOG are per node), two commands a node."""
    cluster = cast(redis.RedisCluster, client)
    nodes = []
    for node in cluster.get_nodes():  # type: ignore[no-untyped-call]
        info = _call(functools.partial(cluster.info, target_nodes=node))
        slow = _call(
            functools.partial(
                cluster.execute_command,
                "SLOWLOG",
                "GET",
                SLOWLOG_COUNT,
                target_nodes=node,
            )
        )
        nodes.append(_node(node.name, info, slow))
    raw = _call(functools.partial(cluster.zrangebyscore, keys.history(res.name), since_ms, "+inf"))
    history_error = refused(raw) if isinstance(raw, Exception) else ""
    return RedisReading(sorted(nodes, key=lambda n: n.node), _points(raw), history_error)


def read(client: redis.Redis, keys: Keys, now_ms: int, window_ms: int) -> RedisReading:
    """One reading of the server (every node of a cluster)."""
    res = resolution_for(window_ms)
    # As stream_growth reads them: a tenth more than the window, and the point before.
    since_ms = now_ms - window_ms - window_ms // 10 - res.step_ms
    if is_cluster(client):
        return _cluster(client, keys, since_ms, res)
    return _single(client, keys, since_ms, res)


def build(
    reading: RedisReading | None,
    streams: Sequence[StreamInfo],
    retention: Retention,
    at_ms: int,
    window_ms: int = GROWTH_WINDOW_MS,
    cluster: bool = False,
) -> RedisPanel:
    """The panel from the last reading and the sampler's sample of the streams."""
    if reading is None:
        return RedisPanel(at_ms, [], [], [], [], window_ms, measuring=True, cluster=cluster)
    warnings = [
        w for n in reading.nodes if n.info is not None for w in node_warnings(n.info, n.node)
    ]
    slowlog = sorted(
        (e for n in reading.nodes for e in n.slow), key=lambda e: (e.at_s, e.id), reverse=True
    )[:SLOWLOG_COUNT]
    growth = growth_warnings(streams, reading.points, retention, at_ms, window_ms)
    return RedisPanel(
        at_ms,
        reading.nodes,
        slowlog,
        warnings,
        growth,
        window_ms,
        cluster=cluster,
        history_points=len(reading.points),
        history_error=reading.history_error,
    )


class RedisMeter:
    """This process's last reading of one server: a new one at most every ``read_every_s``."""

    def __init__(
        self,
        read_every_s: float = READ_EVERY_S,
        window_ms: int = GROWTH_WINDOW_MS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.read_every_s = read_every_s
        self.window_ms = window_ms
        self.clock = clock
        self._tried_s: float | None = None
        self._reading: RedisReading | None = None
        # The sampler's thread and page renders share a meter.
        self._lock = threading.Lock()

    def current(self, client: redis.Redis, keys: Keys, now_ms: int) -> RedisReading:
        with self._lock:
            now = self.clock()
            due = self._tried_s is None or now - self._tried_s >= self.read_every_s
            if due or self._reading is None:
                self._tried_s = now
                self._reading = read(client, keys, now_ms, self.window_ms)
            return self._reading


_meters: PerClient[RedisMeter] = PerClient(RedisMeter)


def meter_for(client: redis.Redis) -> RedisMeter:
    """This process's meter for ``client``'s server (one per client, gone with it)."""
    return _meters.for_client(client)


def redis_panel(
    client: redis.Redis,
    keys: Keys,
    streams: Sequence[StreamInfo],
    retention: Retention,
    at_ms: int,
) -> RedisPanel:
    """The panel as this process last read the server (read again if 10 s old), with the
    growth of ``streams`` (the sample's) judged against ``retention`` (this console's, for a
    stream no worker has trimmed yet)."""
    meter = meter_for(client)
    reading = meter.current(client, keys, at_ms)
    return build(reading, streams, retention, at_ms, meter.window_ms, is_cluster(client))


def panel_fragments(panel: RedisPanel) -> dict[str, str]:
    """The Redis page's panel and the overview's one line, rendered once for every tab."""
    return {
        realtime.redis_key(): render_to_string("console/_redis.html", {"panel": panel}),
        realtime.redis_summary_key(): render_to_string(
            "console/_redis_summary.html", {"panel": panel}
        ),
    }


def tick_fragments(
    client: redis.Redis,
    keys: Keys,
    streams: Sequence[StreamInfo],
    retention: Retention,
    at_ms: int,
) -> dict[str, str]:
    """The sampler's part: the panel's fragments, or none this tick if they cannot be made
    (the Redis page must never stop the other pages' push; its own says "live" no longer)."""
    try:
        return panel_fragments(redis_panel(client, keys, streams, retention, at_ms))
    except Exception as exc:
        log.warning("console: the Redis panel cannot be shown: %s", exc)
        return {}
