"""Retention on a real server (issue 31 item 4): the trim removes what is older than the
retention or beyond the cap, but never an entry a group has not been delivered and
acknowledged; one trim a minute per stream for the whole fleet; its record is what the
sample reads."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis
import redis.asyncio as aredis

from workers.core.keys import Keys
from workers.monitor.sample import collect
from workers.retention import TRIM_EVERY_MS, Retention, trim, trim_turn, trimmer

S = "ret:s"
KEYS = Keys()
HOUR = Retention(3600)
DAY_MS = 86_400_000


def fill(r: redis.Redis, old: int, new: int = 0) -> list[str]:
    """``old`` entries ten days old (one a millisecond), then ``new`` entries of now."""
    start = int(time.time() * 1000) - 10 * DAY_MS
    ids = [str(r.xadd(S, {"event": "{}"}, id=f"{start + i}-0")) for i in range(old)]
    return ids + [str(r.xadd(S, {"event": "{}"})) for _ in range(new)]


def read(r: redis.Redis, group: str, count: int | None = None, ack: int = 0) -> list[str]:
    """``group`` (created at 0) reads ``count`` entries (all by default), acks the first ``ack``."""
    if not r.exists(S) or group not in {g["name"] for g in r.xinfo_groups(S)}:
        r.xgroup_create(S, group, id="0")
    got = r.xreadgroup(group, "c", {S: ">"}, count=count) or [[S, []]]
    ids = [entry_id for entry_id, _ in got[0][1]]
    if ack:
        r.xack(S, group, *ids[:ack])
    return ids


def kept(r: redis.Redis) -> set[str]:
    return {entry_id for entry_id, _ in r.xrange(S)}


def test_retention_trims_what_every_group_acknowledged_past_the_retention(
    r: redis.Redis,
) -> None:
    ids = fill(r, 500, new=20)
    read(r, "g", ack=520)
    done = trim(r, KEYS, S, HOUR, by="test")
    left = kept(r)
    assert done.status == "trimmed" and done.held_by == ""
    assert set(ids[500:]) <= left  # the last hour's entries stay
    # Whole nodes go (~): what is left of the old ones is less than one node (100 entries).
    assert len(left & set(ids[:500])) < 100
    assert done.trimmed == 520 - len(left)


def test_retention_never_trims_a_pending_entry(r: redis.Redis) -> None:
    ids = fill(r, 500, new=5)
    read(r, "g")
    r.xack(S, "g", *(ids[:250] + ids[251:]))  # all but #250, still pending (a failing agent)
    done = trim(r, KEYS, S, HOUR, by="test")
    assert done.held_by == "g" and done.cut == ids[250] == done.bound
    assert set(ids[250:]) <= kept(r)
    assert done.trimmed > 0  # what was before it went
    assert r.xpending(S, "g")["min"] == ids[250]


def test_retention_never_trims_what_a_group_has_not_read(r: redis.Redis) -> None:
    ids = fill(r, 500)
    read(r, "fast", ack=500)
    r.xgroup_create(S, "slow", id="0")  # has read nothing: needs every entry
    assert trim(r, KEYS, S, HOUR, by="test").held_by == "slow"
    assert kept(r) == set(ids)
    read(r, "slow", count=300, ack=300)
    done = trim(r, KEYS, S, HOUR, by="test")
    assert done.held_by == "slow" and done.bound == ids[299]
    assert set(ids[299:]) <= kept(r)
    assert done.trimmed > 0


def test_retention_trims_nothing_of_a_stream_no_group_reads(r: redis.Redis) -> None:
    ids = fill(r, 200)
    assert trim(r, KEYS, S, HOUR, by="test").status == "no-group"
    assert kept(r) == set(ids)
    assert trim(r, KEYS, "ret:none", HOUR, by="test").status == "missing"


def test_retention_dry_run_trims_nothing(r: redis.Redis) -> None:
    ids = fill(r, 200, new=3)
    read(r, "g", ack=203)
    done = trim(r, KEYS, S, HOUR, by="test", dry_run=True)
    assert done.status == "trimmed" and done.trimmed == 200
    assert kept(r) == set(ids)
    assert not r.exists(KEYS.retention(S))  # nor records anything


def test_retention_off_trims_nothing(r: redis.Redis) -> None:
    ids = fill(r, 200)
    read(r, "g", ack=200)
    assert trim(r, KEYS, S, Retention(0), by="test").status == "off"
    assert kept(r) == set(ids)


def test_retention_length_cap_keeps_the_newest(r: redis.Redis) -> None:
    fill(r, 0, new=500)
    read(r, "g", ack=500)
    done = trim(r, KEYS, S, Retention(0, max_len=100), by="test")
    assert done.max_len == 100 and done.cut == ""
    assert 100 <= r.xlen(S) < 300


def test_retention_length_cap_stops_at_what_a_group_needs(r: redis.Redis) -> None:
    ids = fill(r, 0, new=500)
    read(r, "g", ack=100)  # entries from #100 on are pending
    done = trim(r, KEYS, S, Retention(0, max_len=50), by="test")
    assert done.held_by == "g" and done.cut == ids[100] and done.max_len == 0
    assert set(ids[100:]) <= kept(r)


def test_retention_length_cap_not_applied_when_the_check_would_read_too_much(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(trimmer, "PROBE", 10)
    ids = fill(r, 0, new=500)
    read(r, "g", ack=100)
    done = trim(r, KEYS, S, Retention(0, max_len=50), by="test")
    assert "length cap not applied" in done.note and done.trimmed == 0
    assert kept(r) == set(ids)


async def _turns(redis_url: str, workers: int) -> list[str]:
    clients = [aredis.Redis.from_url(redis_url, decode_responses=True) for _ in range(workers)]
    try:
        done = await asyncio.gather(
            *(trim_turn(c, KEYS, S, HOUR, by=f"w{i}") for i, c in enumerate(clients))
        )
        again = await trim_turn(clients[0], KEYS, S, HOUR, by="w0")
    finally:
        for c in clients:
            await c.aclose()
    return [t.status for t in done] + [again.status]


def test_retention_turn_is_one_trim_a_minute_for_the_fleet(r: redis.Redis, redis_url: str) -> None:
    fill(r, 300, new=2)
    read(r, "g", ack=302)
    statuses = asyncio.run(_turns(redis_url, 6))
    assert sorted(statuses[:6]) == ["later"] * 5 + ["trimmed"]
    assert statuses[6] == "later"  # the same worker, at once: not its turn either
    record = r.hgetall(KEYS.retention(S))
    assert int(record["next_ms"]) == int(record["at_ms"]) + TRIM_EVERY_MS
    # A trim by hand does not wait for the turn, nor move it.
    assert trim(r, KEYS, S, HOUR, by="manage.py trim").status == "trimmed"
    assert r.hget(KEYS.retention(S), "next_ms") == record["next_ms"]


def test_retention_sample_shows_the_first_entry_and_the_last_trim(r: redis.Redis) -> None:
    fill(r, 300, new=2)
    read(r, "g", ack=302)
    r.sadd(KEYS.streams_index, S)
    done = trim(r, KEYS, S, HOUR, by="worker-1")
    info = collect(r, KEYS).stream(S)
    assert info is not None and info.trim is not None
    assert info.first_id == r.xrange(S, count=1)[0][0]
    assert info.trim.by == "worker-1" and info.trim.retention == HOUR
    assert info.trim.trimmed == info.trim.trimmed_total == done.trimmed > 0
    r.delete(S)
    emptied = collect(r, KEYS).stream(S)
    assert emptied is not None and emptied.first_id is None


def test_retention_is_not_held_back_when_nothing_is_old_enough(r: redis.Redis) -> None:
    fill(r, 0, new=50)
    r.xgroup_create(S, "idle", id="0")  # has read nothing, but nothing is past the retention
    done = trim(r, KEYS, S, HOUR, by="test")
    assert done.held_by == "" and done.trimmed == 0 and r.xlen(S) == 50
