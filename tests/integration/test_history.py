"""The recorded history in a real Redis: time buckets, retention by time, the single writer."""

from __future__ import annotations

import json
import time

import redis

from tests.support.wait import wait_for
from workers.core.keys import Keys
from workers.from_settings import redis_client
from workers.monitor.history import (
    MINUTE,
    RESOLUTIONS,
    SECOND,
    TEN_SECONDS,
    HistoryReader,
    HistoryStore,
    Point,
)
from workers.monitor.recorder import (
    RETIRED_RESOLUTIONS,
    Cadence,
    Lease,
    Recorder,
    start_recorder,
)

KEYS = Keys()
T0 = 1_800_000_000_000  # a whole minute, in ms
# Seconds, not the production tens of seconds: a takeover within a test's patience.
SHORT = Cadence(standby_s=1.0, lease_ttl_ms=3_000, keepalive_ms=2_000)


def point(t_ms: int, processed: int = 0) -> Point:
    return {"t": t_ms, "s": {"s": {"n": 0, "a": processed, "p": processed, "f": 0, "d": 0,
                                  "h": 0, "r": 0, "g": {}}}}  # fmt: skip


def held_store(r: redis.Redis, holder: str = "me") -> HistoryStore:
    Lease(r, KEYS.history_recorder, holder).hold()
    return HistoryStore(r, KEYS)


def times(r: redis.Redis, resolution: str) -> list[int]:
    return [int(s) for _, s in r.zrange(KEYS.history(resolution), 0, -1, withscores=True)]


def test_a_point_is_added_only_when_its_bucket_is_new(r: redis.Redis) -> None:
    store = held_store(r)
    assert store.record(point(T0), "me") == 3  # every resolution opens a bucket
    assert store.record(point(T0 + 400), "me") == 0  # the same second
    assert store.record(point(T0 + 1_000), "me") == 1  # a new second only
    assert store.record(point(T0 + 10_000), "me") == 2  # a new second and a new 10 s bucket
    assert times(r, "1s") == [T0, T0 + 1_000, T0 + 10_000]
    assert times(r, "10s") == [T0, T0 + 10_000]
    assert times(r, "1m") == [T0]


def test_points_older_than_the_retention_are_removed(r: redis.Redis) -> None:
    store = held_store(r)
    for s in range(0, 400):  # 400 s of points, one a second
        store.record(point(T0 + s * 1_000), "me")
    kept = times(r, "1s")
    # 5 minutes back from the newest point, both ends included.
    assert kept[0] == T0 + 99_000 and kept[-1] == T0 + 399_000
    assert len(kept) == 301 == SECOND.max_points
    assert len(times(r, "10s")) == 40


def test_a_clock_that_goes_back_adds_nothing(r: redis.Redis) -> None:
    store = held_store(r)
    store.record(point(T0 + 5_000), "me")
    assert store.record(point(T0 + 1_000), "me") == 0
    assert times(r, "1s") == [T0 + 5_000]


def test_no_resolution_holds_more_than_its_retention_in_points() -> None:
    assert [r.max_points for r in RESOLUTIONS] == [301, 361, 1441]
    assert (SECOND.keep_ms, TEN_SECONDS.keep_ms, MINUTE.keep_ms) == (300_000, 3_600_000, 86_400_000)


def test_only_the_lease_holder_writes(r: redis.Redis) -> None:
    store = held_store(r, "first")
    assert store.record(point(T0), "second") is None
    assert not r.exists(KEYS.history("1s"))


def test_reads_are_oldest_first_and_skip_foreign_members(r: redis.Redis) -> None:
    store = held_store(r)
    for s in range(5):
        store.record(point(T0 + s * 1_000, s), "me")
    r.zadd(KEYS.history("1s"), {"not json": T0 + 2_500})
    assert [p["t"] for p in store.read(SECOND)] == [T0 + s * 1_000 for s in range(5)]
    newest = store.newest({SECOND: 3, MINUTE: 2})
    # The newest three members, the foreign one skipped.
    assert [p["t"] for p in newest["1s"]] == [T0 + 3_000, T0 + 4_000]
    assert [p["t"] for p in newest["1m"]] == [T0]


def test_two_recorders_only_one_writes(r: redis.Redis) -> None:
    first, second = Recorder(r, KEYS, "first"), Recorder(r, KEYS, "second")
    r.sadd(KEYS.streams_index, "s")
    for _ in range(3):
        r.xadd("s", {"n": "1"})  # a change each tick: each one writes
        results = [first.tick(), second.tick()]
        assert results[0] is not None and results[1] is None
        time.sleep(1.0)
    assert r.get(KEYS.history_recorder) == "first"
    recorded = [json.loads(m)["t"] // 1000 for m in r.zrange(KEYS.history("1s"), 0, -1)]
    assert len(recorded) == 3 and len(set(recorded)) == 3  # one point a tick, one a second


def test_a_stand_by_takes_over_when_the_holder_stops_ticking(r: redis.Redis) -> None:
    first, second = Recorder(r, KEYS, "first", SHORT), Recorder(r, KEYS, "second", SHORT)
    assert first.tick() is not None  # then "first" dies without releasing
    assert second.tick() is None
    began = time.monotonic()
    wait_for(lambda: second.tick() is not None, timeout_s=10, what="the lease to expire")
    # Within the lease's lifetime (3 s) of the last renewal, not sooner.
    assert 2.0 <= time.monotonic() - began <= 5.0
    assert r.get(KEYS.history_recorder) == "second"


def test_a_stopped_recorder_thread_hands_over_at_the_next_try(
    r: redis.Redis, redis_url: str
) -> None:
    a = start_recorder(redis_client, KEYS, "a", SHORT)
    wait_for(lambda: r.get(KEYS.history_recorder) is not None, timeout_s=5, what="a holder")
    b = start_recorder(redis_client, KEYS, "b", SHORT)
    try:
        # A quiet history: a point, then the keepalive's (2 s).
        wait_for(lambda: r.zcard(KEYS.history("1s")) >= 2, timeout_s=10, what="two points")
        holder = str(r.get(KEYS.history_recorder))
        first, other = (a, "b:") if holder.startswith("a:") else (b, "a:")
        first.stop()  # releases the lease: the other takes it at its next try (1 s)
        began = time.monotonic()
        wait_for(
            lambda: str(r.get(KEYS.history_recorder)).startswith(other),
            timeout_s=5,
            what="the other recorder to take over",
        )
        assert time.monotonic() - began < SHORT.standby_s + 1.0
        count = r.zcard(KEYS.history("1s"))
        wait_for(lambda: r.zcard(KEYS.history("1s")) > count, timeout_s=5, what="its points")
    finally:
        a.stop()
        b.stop()


def test_a_reader_keeps_its_points_and_follows_trims_and_flushes(r: redis.Redis) -> None:
    store = held_store(r)
    reader = HistoryReader(store)
    for s in range(300):
        store.record(point(T0 + s * 1_000), "me")
    assert len(reader.read_all()["1s"]) == 300
    for s in range(300, 310):  # ten more: ten of the oldest are trimmed
        store.record(point(T0 + s * 1_000), "me")
    points = reader.read_all()["1s"]
    assert [p["t"] for p in points] == [T0 + s * 1_000 for s in range(9, 310)]
    assert points == store.read(SECOND)
    r.flushdb()
    Lease(r, KEYS.history_recorder, "me").hold()
    store.record(point(T0 + 400_000), "me")
    assert [p["t"] for p in reader.read_all()["1s"]] == [T0 + 400_000]


def test_the_recorder_deletes_the_retired_console_history(r: redis.Redis) -> None:
    retired = [KEYS.retired_history(resolution) for resolution in RETIRED_RESOLUTIONS]
    for key in retired:
        r.zadd(key, {"old point": 1})
    standby = Recorder(r, KEYS, "second")
    Recorder(r, KEYS, "first").tick()
    assert r.exists(*retired) == 0
    r.zadd(retired[0], {"old point": 1})
    assert standby.tick() is None  # standing by: it deletes nothing
    assert r.exists(retired[0]) == 1


def test_history_kept_before_its_keys_had_a_hash_tag_is_renamed_not_lost(r: redis.Redis) -> None:
    old = [KEYS.untagged_history(res.name) for res in RESOLUTIONS]
    for key in old:
        r.zadd(key, {json.dumps({"t": T0}): T0})
    r.zadd(KEYS.history("1m"), {json.dumps({"t": T0 + 1}): T0 + 1})  # begun by a newer one
    Recorder(r, KEYS, "first").tick()
    assert r.exists(*old) == 0
    store = HistoryStore(r, KEYS)
    assert store.read(SECOND)[0]["t"] == T0  # then the recorder's own point
    assert store.read(MINUTE)[0]["t"] == T0 + 1  # the untagged one was dropped
