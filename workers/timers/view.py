"""What the console shows of the timers: each schedule and when it is next due, and each
stream's delayed events (how many, the first due). Three round trips whatever the count:
the stream index, one pipeline of ZCARD + first score per stream and HGET per schedule,
and the server's clock."""

from __future__ import annotations

from dataclasses import dataclass

import redis

from workers.core.keys import Keys
from workers.redis.pipelines import server_ms
from workers.timers.schedules import Schedule


@dataclass(frozen=True, slots=True)
class ScheduleRow:
    name: str
    cron: str
    type: str
    stream: str
    timezone: str
    grace_s: float
    next_due_ms: int
    last_published_ms: int | None  # the last tick published, None: none yet
    # A tick after the last published one, skipped (missed by more than its grace).
    last_skipped_ms: int | None


@dataclass(frozen=True, slots=True)
class DelayedRow:
    stream: str
    count: int
    next_due_ms: int | None


@dataclass(frozen=True, slots=True)
class TimersView:
    at_ms: int
    schedules: list[ScheduleRow]
    delayed: list[DelayedRow]
    holder: str | None  # the process running the fleet's timer; None: nothing to do

    @property
    def delayed_total(self) -> int:
        return sum(row.count for row in self.delayed)

    @property
    def next_delayed_ms(self) -> int | None:
        due = [row.next_due_ms for row in self.delayed if row.next_due_ms is not None]
        return min(due) if due else None


def read(
    client: redis.Redis,
    keys: Keys,
    schedules: list[Schedule],
    ticks_stream: dict[str, str] | None = None,
) -> TimersView:
    """The timers as they stand. ``ticks_stream``: the (partition) stream each schedule's
    ticks go to, by name (its last tick is recorded there); by default its own stream."""
    streams = sorted(str(s) for s in client.smembers(keys.delayed_streams))  # type: ignore[union-attr]
    where = ticks_stream or {}
    with client.pipeline(transaction=False) as pipe:
        for stream in streams:
            pipe.zcard(keys.delayed(stream))
            pipe.zrange(keys.delayed(stream), 0, 0, withscores=True)
        for one in schedules:
            ticks = keys.schedule_ticks(where.get(one.name, one.stream))
            pipe.hmget(ticks, [one.name, f"{one.name}|published"])
        pipe.get(keys.timers_lease)
        replies = pipe.execute()
    holder = replies.pop()
    now_ms = server_ms(client)
    delayed = [
        DelayedRow(stream, int(replies[2 * n]), _first(replies[2 * n + 1]))
        for n, stream in enumerate(streams)
    ]
    lasts = replies[2 * len(streams) :]
    rows = [_row(one, now_ms, last) for one, last in zip(schedules, lasts, strict=True)]
    return TimersView(now_ms, rows, delayed, str(holder) if holder else None)


def _first(reply: list[tuple[str, float]]) -> int | None:
    return int(reply[0][1]) if reply else None


def _row(one: Schedule, now_ms: int, last: list[str | None]) -> ScheduleRow:
    handled, published = (int(v) if v else None for v in last)
    return ScheduleRow(
        name=one.name,
        cron=one.cron.expression,
        type=one.type,
        stream=one.stream,
        timezone=one.timezone,
        grace_s=one.grace_s,
        next_due_ms=one.next_tick_ms(now_ms),
        last_published_ms=published,
        # A schedule never published has had nothing to miss: its first tick is ahead.
        last_skipped_ms=handled if published and handled and handled > published else None,
    )
