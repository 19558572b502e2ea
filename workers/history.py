"""A small rolling history of samples in Redis, so a reload or a second console sees the same
sparklines: 5 minutes at one point a second and 1 hour at one point a minute."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import redis

from workers.keys import Keys
from workers.sample import Sample

# One history point: {"t": ms, "s": {stream: {"n": length, "a": added, "p": processed,
# "f": failed, "d": dead-lettered, "h": idempotency hits, "r": deferred (out of a rate budget),
# "g": {group: [lag, pending, read]}}}}. Points recorded before "r" existed simply lack it.
Point = dict[str, Any]


def to_point(sample: Sample) -> Point:
    return {
        "t": sample.at_ms,
        "s": {
            s.name: {
                "n": s.length,
                "a": s.entries_added,
                "p": s.counters["processed"],
                "f": s.counters["failed"],
                "d": s.counters["dead_lettered"],
                "h": s.counters["idempotency_hits"],
                # .get: a sample built by hand may predate the counter.
                "r": s.counters.get("deferred", 0),
                "g": {g.name: [g.lag, g.pending, g.entries_read] for g in s.groups},
            }
            for s in sample.streams
        },
    }


POINTS_1S = 300
POINTS_1M = 60
# The writer's claim lasts a few ticks, so a console that stops hands over quickly.
WRITER_TTL_MS = 3_000

# Only one console writes (whichever holds the writer key); the others still sample and
# push to their own browsers, so two consoles never double the history.
RECORD = """
local mine = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
if not mine then
  if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
redis.call('LPUSH', KEYS[2], ARGV[3])
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[5]) - 1)
local head = redis.call('LINDEX', KEYS[3], 0)
if (not head) or math.floor(cjson.decode(head)['t'] / 60000) < tonumber(ARGV[4]) then
  redis.call('LPUSH', KEYS[3], ARGV[3])
  redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[6]) - 1)
end
return 1
"""


@dataclass(frozen=True, slots=True)
class History:
    recent: list[Point]  # one a second, oldest first
    hour: list[Point]  # one a minute, oldest first


class HistoryStore:
    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys
        self._record = client.register_script(RECORD)

    def record(self, point: Point, writer: str) -> bool:
        """Append ``point`` if this console is the writer (or becomes it). True if written."""
        keys = [
            self.keys.console_sampler,
            self.keys.console_history("1s"),
            self.keys.console_history("1m"),
        ]
        minute = point["t"] // 60_000
        args = [writer, WRITER_TTL_MS, _dump(point), minute, POINTS_1S, POINTS_1M]
        return bool(self._record(keys=keys, args=args))

    def read(self) -> History:
        with self.client.pipeline(transaction=False) as pipe:
            pipe.lrange(self.keys.console_history("1s"), 0, POINTS_1S - 1)
            pipe.lrange(self.keys.console_history("1m"), 0, POINTS_1M - 1)
            recent, hour = pipe.execute()
        return History(_load(recent), _load(hour))


def _dump(point: Point) -> str:
    return json.dumps(point, separators=(",", ":"))


def _load(raw: list[str]) -> list[Point]:
    points = []
    for item in reversed(raw):
        try:
            points.append(json.loads(item))
        except ValueError:
            continue  # a point written by something else: skip it, never fail the page
    return points
