"""The recorded history of samples in Redis, by time: 5 minutes at 1 s, 1 hour at 10 s and
24 hours at 1 min, so every console (and a restarted one) reads the same charts and rates.

Each resolution is a sorted set of JSON points scored by their time (ms, the Redis server's
clock). A point is added only when its time bucket (``t // step_ms``) is newer than the
newest point's, and points older than the resolution's retention are removed in the same
call, so each set holds at most retention / step points whatever the tick rate. Only the
process holding the recorder lease writes (workers/monitor/recorder.py); the check is inside the
script, so a lease lost between the claim and the write writes nothing. The recorder writes
only when something changed (``read_streams`` is what it compares), so a write first fills
the quiet seconds before it with copies of the last point.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

import redis

from workers.core.keys import Keys
from workers.core.lua import lua_script
from workers.monitor import agents
from workers.monitor.sample import Sample
from workers.redis import stats

# One history point: {"t": ms, "s": {stream: {"n": length, "a": added, "p": processed,
# "f": failed, "d": dead-lettered, "h": idempotency hits, "r": deferred (out of a rate budget),
# "g": {group: [lag, pending, read]}}}, "y": {event type: agents.type_entries' entry}}.
# Points recorded before "r" or "y" existed simply lack them.
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
        "y": agents.type_entries(sample.durations, sample.usage),
    }


@dataclass(frozen=True, slots=True)
class Resolution:
    name: str  # the key suffix: ``keys.history(name)``
    step_ms: int
    keep_ms: int

    @property
    def max_points(self) -> int:
        # One per bucket over the retention, plus the bucket the oldest point is in.
        return self.keep_ms // self.step_ms + 1


SECOND = Resolution("1s", 1_000, 5 * 60_000)
TEN_SECONDS = Resolution("10s", 10_000, 60 * 60_000)
MINUTE = Resolution("1m", 60_000, 24 * 60 * 60_000)
RESOLUTIONS = (SECOND, TEN_SECONDS, MINUTE)

RECORD = lua_script(__package__, "history_record")


@dataclass(frozen=True, slots=True)
class Recorded:
    added: int  # resolutions appended to
    at_ms: int  # the new point's time


def queue_stream_reads(pipe: Any, keys: Keys, names: list[str]) -> None:
    """Queue what a point holds of each stream: two commands a stream (``read_streams``).
    ``FULL COUNT 1``: the groups' numbers with the length, and one entry, not ten."""
    for name in names:
        pipe.execute_command("XINFO STREAM", name, "FULL", "COUNT", 1, full=True)
        pipe.hgetall(keys.stats(name))


def read_streams(names: list[str], replies: list[Any]) -> dict[str, Any]:
    """A point's "s" from ``queue_stream_reads``' replies (a pipeline run with
    ``raise_on_error=False``): what ``to_point(collect(...))`` holds of the same streams,
    from two of the commands ``collect`` sends a stream."""
    return {name: _stream_entry(replies[2 * i], replies[2 * i + 1]) for i, name in enumerate(names)}


def queue_type_reads(pipe: Any, keys: Keys) -> None:
    """Queue what a point holds per event type: the run duration histogram and the model
    usage hash, two commands (``read_types``)."""
    pipe.hgetall(keys.run_durations)
    pipe.hgetall(keys.usage)


def read_types(durations: Any, usage: Any) -> dict[str, Any]:
    """A point's "y" from ``queue_type_reads``' two replies: ``to_point``'s, from the same
    hashes ``collect`` reads. A reply that is an error counts as empty."""
    return agents.type_entries(
        stats.durations_by_type(durations if isinstance(durations, dict) else {}),
        stats.usage_by_type(usage if isinstance(usage, dict) else {}),
    )


def _stream_entry(info: Any, counters: Any) -> dict[str, Any]:
    data = info if isinstance(info, dict) else {}
    counts = dict.fromkeys(stats.COUNTERS, 0)
    try:  # as sample._isolated: a garbled counter or reply zeroes this stream only
        if isinstance(counters, dict):
            counts = {c: int(counters.get(c, 0)) for c in stats.COUNTERS}
        groups = {
            str(g["name"]): [_int(g.get("lag")), int(g["pel-count"]), _int(g.get("entries-read"))]
            for g in sorted(data.get("groups") or [], key=lambda g: str(g["name"]))
        }
        length, added = int(data.get("length", 0)), _int(data.get("entries-added"))
    except (TypeError, ValueError, KeyError, AttributeError):
        counts, groups, length, added = dict.fromkeys(stats.COUNTERS, 0), {}, 0, None
    return {
        "n": length,
        "a": added,
        "p": counts["processed"],
        "f": counts["failed"],
        "d": counts["dead_lettered"],
        "h": counts["idempotency_hits"],
        "r": counts["deferred"],
        "g": groups,
    }


def _int(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


class HistoryStore:
    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys
        self._record = client.register_script(RECORD)

    def record(self, point: Point, holder: str) -> int | None:
        """Add ``point`` (``{"t", "s"}``) to each resolution whose bucket it opens, if
        ``holder`` holds the recorder lease. The number of resolutions appended to, or None
        if not the holder."""
        types = _dump(point.get("y", {}))
        recorded = self.append(_dump(point["s"]), holder, at_ms=point["t"], types=types)
        return None if recorded is None else recorded.added

    def append(
        self,
        streams: str,
        holder: str,
        at_ms: int = 0,
        carry_from_ms: int = 0,
        types: str = "{}",
    ) -> Recorded | None:
        """Add a point of ``streams`` and ``types`` (a point's "s" and "y", as JSON) at
        ``at_ms``, or at the server's clock now if 0, if ``holder`` holds the recorder lease;
        None if not.

        ``carry_from_ms`` is the time of the point this holder recorded last: while it is
        still the newest, a copy of it is added each second up to the new one (nothing
        changed meanwhile), so the 1 s charts draw a level, not a gap. One round trip."""
        keys = [self.keys.history_recorder, *(self.keys.history(r.name) for r in RESOLUTIONS)]
        body = f'"s":{streams},"y":{types}'
        args: list[str | int] = [holder, at_ms, body, carry_from_ms]
        for r in RESOLUTIONS:
            args += [r.step_ms, r.keep_ms, r.max_points]
        added, t = self._record(keys=keys, args=args)
        return None if int(added) < 0 else Recorded(int(added), int(t))

    def read(self, resolution: Resolution) -> list[Point]:
        """Every point of one resolution, oldest first; bounded: a set never holds more
        than ``resolution.max_points``."""
        raw: list[str] = self.client.zrange(  # type: ignore[assignment]
            self.keys.history(resolution.name), 0, -1
        )
        return _load(raw)

    def newest(self, counts: dict[Resolution, int]) -> dict[str, list[Point]]:
        """The newest ``count`` points of each resolution, oldest first: one round trip."""
        with self.client.pipeline(transaction=False) as pipe:
            for r, count in counts.items():
                pipe.zrange(self.keys.history(r.name), -count, -1)
            replies = pipe.execute()
        return {r.name: _load(raw) for r, raw in zip(counts, replies, strict=True)}


class HistoryReader:
    """Every resolution's points, kept between calls (a console process's page renders):
    each call reads only the points recorded since the last one, plus each set's oldest
    score and size, in one transaction. A set that no longer matches what is kept (a flush,
    a foreign member) is read again whole."""

    def __init__(self, store: HistoryStore) -> None:
        self.store = store
        self._points: dict[str, list[Point]] = {r.name: [] for r in RESOLUTIONS}
        self._lock = threading.Lock()

    def read_all(self) -> dict[str, list[Point]]:
        with self._lock:
            with self.store.client.pipeline(transaction=True) as pipe:
                for r in RESOLUTIONS:
                    kept = self._points[r.name]
                    key = self.store.keys.history(r.name)
                    pipe.zrangebyscore(key, f"({kept[-1]['t']}" if kept else "-inf", "+inf")
                    pipe.zrange(key, 0, 0)
                    pipe.zcard(key)
                replies = pipe.execute()
            for i, r in enumerate(RESOLUTIONS):
                new, oldest, count = replies[3 * i : 3 * i + 3]
                # A point's score is its "t" (read so: a cluster's transaction returns
                # WITHSCORES replies unparsed).
                low = first[0]["t"] if (first := _load(oldest)) else float("inf")
                points = [p for p in self._points[r.name] if p["t"] >= low] + _load(new)
                if len(points) != count:
                    points = self.store.read(r)
                self._points[r.name] = points
            # Copies of the lists: the points themselves are never changed by anyone.
            return {name: list(points) for name, points in self._points.items()}


def _dump(point: Point) -> str:
    return json.dumps(point, separators=(",", ":"))


def _load(raw: list[str]) -> list[Point]:
    points = []
    for item in raw:
        try:
            point = json.loads(item)
        except ValueError:
            continue  # a member written by something else: skip it, never fail the page
        if isinstance(point, dict) and isinstance(point.get("t"), int):
            points.append(point)
    return points
