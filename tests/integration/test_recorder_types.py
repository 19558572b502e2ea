"""Per-type history (the points' "y": run durations and model usage by event type) costs the
recorder nothing at rest: the two hashes are read once a change is seen, then beside the
streams while something runs, and never on a quiet tick or a keepalive."""

from __future__ import annotations

import time
from collections import Counter

import pytest
import redis

from tests.integration.test_recorder_quiet import (  # noqa: F401 (fixtures)
    KEYS,
    STREAMS,
    CountingConnection,
    commands,
    counted,
    points,
    r,
    server,
)
from workers.monitor.recorder import Cadence, Recorder
from workers.redis import stats

pytestmark = pytest.mark.serial  # counts the whole server's commands

QUIET = Counter({"xinfo|stream": len(STREAMS), "hgetall": len(STREAMS)})


def run_ended(r: redis.Redis, seconds: float) -> None:  # noqa: F811
    """What the settle pipeline writes for one run of demo.echo (counters, then durations)."""
    r.hincrby(KEYS.stats("orders"), "processed", 1)
    increments = stats.duration_increments({"demo.echo": [seconds]})
    for name, value in increments.items():
        r.hincrbyfloat(KEYS.run_durations, name, value)
    r.hincrby(KEYS.usage, "demo.echo|calls", 1)
    r.hincrby(KEYS.usage, "demo.echo|prompt_tokens", 120)


def test_a_run_is_recorded_with_its_type_and_then_the_recorder_is_quiet(
    r: redis.Redis,  # noqa: F811
    counted: redis.Redis,  # noqa: F811
) -> None:
    recorder = Recorder(counted, KEYS, "holder", Cadence(keepalive_ms=60_000))
    recorder.tick()
    time.sleep(1.0)
    assert recorder.tick() == 0
    commands(r)
    run_ended(r, 0.2)
    commands(r)
    sent = CountingConnection.sent
    assert (recorder.tick() or 0) >= 1
    # The change seen, the two hashes are read in a round trip of their own, then written.
    assert CountingConnection.sent - sent == 3
    entry = points(r)[-1]["y"]["demo.echo"]
    assert entry["b"][-1] == 1 and entry["s"] == pytest.approx(0.2)
    assert entry["u"][:2] == [1, 120]
    commands(r)
    time.sleep(1.0)
    # The tick after a change reads them beside the streams (one round trip), finds nothing
    # new, and the next is quiet again: the streams alone.
    sent = CountingConnection.sent
    assert recorder.tick() == 0
    assert CountingConnection.sent - sent == 1
    assert commands(r) == QUIET + Counter({"hgetall": 2})
    assert recorder.tick() == 0
    assert commands(r) == QUIET


def test_a_keepalive_at_rest_keeps_the_types_without_reading_them(
    r: redis.Redis,  # noqa: F811
) -> None:
    run_ended(r, 2.0)
    recorder = Recorder(r, KEYS, "holder", Cadence(keepalive_ms=2_000))
    recorder.tick()
    time.sleep(1.0)
    assert recorder.tick() == 0
    commands(r)
    time.sleep(1.0)
    assert (recorder.tick() or 0) >= 1
    sent = commands(r)
    assert sent["hgetall"] == len(STREAMS)  # the streams' counters only
    first, copy, fresh = points(r)
    assert first["y"] == copy["y"] == fresh["y"]
    assert fresh["y"]["demo.echo"]["b"][-1] == 1
