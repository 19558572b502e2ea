"""Delayed events in Redis: held in a sorted set per stream until due, then moved in.

``add`` holds envelopes (one script call each, in one pipeline) and wakes the timer when one
of them became the first due of its stream; ``move_due`` is the timer's one script call per
stream that XADDs what is due and says when the next one is. ``due_time`` turns the
caller's ``delay_s=`` / ``at=`` into a due time, or refuses it before anything is written.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import redis

from workers.core.errors import InvalidDelay, RedisUnavailable
from workers.core.keys import Keys
from workers.core.lua import lua_script
from workers.redis.connection import UNREACHABLE
from workers.redis.pipelines import on_master, queue_script
from workers.redis.replication import Durability, check_confirmed, queue_wait

ADD = lua_script(__package__, "delay_add")
MOVE = lua_script(__package__, "move_due")
# Moved per script call: one call holds the server for well under a millisecond per 100.
MOVE_BATCH = 500


@dataclass(frozen=True, slots=True)
class Due:
    """When a delayed event is due: ``at_ms`` (epoch ms) or ``delay_ms`` from the server's
    clock when it is stored. Neither: publish at once."""

    at_ms: int = 0
    delay_ms: int = 0

    @property
    def now(self) -> bool:
        return self.at_ms == 0 and self.delay_ms == 0


NOW = Due()


def due_time(delay_s: float | None = None, at: datetime | float | None = None) -> Due:
    """``publish``'s ``delay_s`` / ``at`` checked: InvalidDelay for both given, a negative
    or non-finite delay, a naive datetime or a non-number; a past ``at`` or a zero delay is
    ``NOW`` (published at once)."""
    if delay_s is not None and at is not None:
        raise InvalidDelay("give delay_s or at, not both")
    if delay_s is not None:
        seconds = _number(delay_s, "delay_s")
        if seconds < 0:
            raise InvalidDelay(f"delay_s must be >= 0, got {delay_s!r}")
        return Due(delay_ms=math.ceil(seconds * 1000)) if seconds > 0 else NOW
    if at is None:
        return NOW
    if isinstance(at, datetime):
        if at.tzinfo is None or at.utcoffset() is None:
            raise InvalidDelay(f"at must be timezone-aware (say tzinfo=UTC), got {at.isoformat()}")
        epoch_s = at.timestamp()
    else:
        epoch_s = _number(at, "at")
    # A time already past is published at once (by this host's clock: a small skew only
    # moves an event by that much, and the timer moves anything past due at once anyway).
    return Due(at_ms=math.ceil(epoch_s * 1000)) if epoch_s > time.time() else NOW


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidDelay(f"{name} must be a number of seconds, got {value!r}")
    if not math.isfinite(value):
        raise InvalidDelay(f"{name} must be finite, got {value!r}")
    return float(value)


def add(
    client: redis.Redis,
    keys: Keys,
    entries: list[tuple[str, str]],
    due: Due,
    durability: Durability | None = None,
) -> list[int]:
    """Hold each ``(stream, envelope JSON)`` until ``due``: the stream named in the index,
    then one pipeline of script calls per stream (on a cluster, on its master), then the
    wake-up (a PUBLISH) if one became its stream's first due, as the timer may be asleep
    past it. Returns each one's due time (epoch ms)."""
    try:
        client.sadd(keys.delayed_streams, *sorted({stream for stream, _ in entries}))
        replies: list[Any] = []
        for stream, payloads in _by_stream(entries).items():
            key = keys.delayed(stream)
            adding = functools.partial(_add_to, delayed_key=key, payloads=payloads, due=due)
            replies += on_master(client, key, functools.partial(adding, durability=durability))
        if any(int(first) for _, first in replies):
            client.publish(keys.timers_channel, str(min(int(d) for d, _ in replies)))
    except UNREACHABLE as exc:
        raise RedisUnavailable(f"could not hold {len(entries)} delayed event(s): {exc}") from exc
    return [int(d) for d, _ in replies]


def _by_stream(entries: list[tuple[str, str]]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for stream, payload in entries:
        grouped.setdefault(stream, []).append(payload)
    return grouped


def _add_to(
    client: redis.Redis,
    delayed_key: str,
    payloads: list[str],
    due: Due,
    durability: Durability | None,
) -> list[Any]:
    """One pipeline on the master holding ``delayed_key`` (a cluster pipeline cannot WAIT)."""
    script = client.register_script(ADD)
    with client.pipeline(transaction=False) as pipe:
        for payload in payloads:
            queue_script(pipe, script, [delayed_key], [due.at_ms, due.delay_ms, payload])
        if durability is not None:
            queue_wait(pipe, durability)
        replies = pipe.execute()
    if durability is not None:
        check_confirmed(int(replies.pop()), durability, f"{len(payloads)} delayed event(s)")
    return replies


@dataclass(frozen=True, slots=True)
class Moved:
    moved: int
    next_due_ms: int | None  # None: nothing left in that stream
    server_ms: int


class Mover:
    """``move_due`` for one client: the script registered once."""

    def __init__(self, client: redis.Redis, keys: Keys, batch: int = MOVE_BATCH) -> None:
        self.keys = keys
        self.batch = batch
        self._move = client.register_script(MOVE)

    def move_due(self, stream: str) -> Moved:
        """XADD ``stream``'s due delayed events (all of them, a batch per script call)."""
        total = 0
        while True:
            moved, next_ms, now_ms = self._move(
                keys=[self.keys.delayed(stream), stream], args=[self.batch]
            )
            total += int(moved)
            # A full batch may have left more due: go on; else the next one is in the future.
            if int(moved) < self.batch:
                return Moved(total, None if int(next_ms) < 0 else int(next_ms), int(now_ms))
