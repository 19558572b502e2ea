"""Schedules against a real server: one event per tick however many timers race, a tick
missed by a restart shorter than its grace published late once, older ones skipped."""

from __future__ import annotations

import functools
import logging
import threading

import pytest
import redis

from tests.support.processes import manage
from workers.core.events import decode_envelope
from workers.core.keys import Keys
from workers.producers.publish import scheduled_entry
from workers.redis.pipelines import server_ms
from workers.timers import Schedule, Timer, TimerCadence, make

STREAM = "streamdesk:events"
KEYS = Keys()
MINUTE_MS = 60_000


def timer(r: redis.Redis, schedules: list[Schedule], holder: str) -> Timer:
    client = redis.Redis(**r.connection_pool.connection_kwargs)
    return Timer(client, KEYS, schedules, functools.partial(scheduled_entry, client), holder)


def events(r: redis.Redis) -> list[tuple[str, str]]:
    return [
        (e.id or "", e.source) for e in (decode_envelope(f["event"]) for _, f in r.xrange(STREAM))
    ]


def test_two_timers_over_one_tick_publish_one_event(r: redis.Redis) -> None:
    every_minute = make("* * * * *", type="demo.echo", data={"n": 1})
    timers = [timer(r, [every_minute], f"t{n}") for n in range(2)]
    start = threading.Barrier(2)

    def run(one: Timer) -> None:
        start.wait()
        one.work()  # no lease taken: both race on the script, as two holders would

    threads = [threading.Thread(target=run, args=(t,)) for t in timers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    tick = every_minute.last_tick_ms(server_ms(r))
    assert events(r) == [(every_minute.event_id(tick), "schedule")]
    assert int(r.hget(KEYS.schedule_ticks(STREAM), every_minute.name) or 0) == tick


def test_a_tick_is_published_once_across_timers_over_time(r: redis.Redis) -> None:
    every_minute = make("* * * * *", type="demo.echo")
    first, second = timer(r, [every_minute], "a"), timer(r, [every_minute], "b")
    for _ in range(3):
        first.work()
        second.work()
    assert len(events(r)) == 1


def test_restart_within_grace_publishes_the_missed_tick_late_once(r: redis.Redis) -> None:
    # The last run published the tick before this one; the fleet was down over this one,
    # for less than the grace (a whole minute: every tick is within it).
    every_minute = make("* * * * *", type="demo.echo", grace_s=120)
    tick = every_minute.last_tick_ms(server_ms(r))
    r.hset(KEYS.schedule_ticks(STREAM), every_minute.name, tick - MINUTE_MS)
    wait_s = timer(r, [every_minute], "restarted").work()
    assert events(r) == [(every_minute.event_id(tick), "schedule")]
    assert wait_s is not None and 0 < wait_s <= 60
    timer(r, [every_minute], "another").work()
    assert len(events(r)) == 1


def test_ticks_older_than_the_grace_are_skipped_and_logged(
    r: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    hourly = make("0 * * * *", type="demo.echo", grace_s=1)
    tick = hourly.last_tick_ms(server_ms(r))
    if server_ms(r) - tick < 2_000:
        pytest.skip("the hour has just begun: its tick is still within the grace")
    r.hset(KEYS.schedule_ticks(STREAM), hourly.name, tick - 3 * 3_600_000)
    with caplog.at_level(logging.WARNING, logger="streamdesk.timers"):
        timer(r, [hourly], "late").work()
    assert events(r) == []
    assert "skipped, missed by more than its grace (1 s)" in caplog.text
    assert int(r.hget(KEYS.schedule_ticks(STREAM), hourly.name) or 0) == tick


def test_a_schedule_tick_goes_to_its_partition_every_time(r: redis.Redis) -> None:
    one = make("* * * * *", type="demo.echo", name="report")
    a, _ = scheduled_entry(r, one, 60_000)
    b, _ = scheduled_entry(r, one, 120_000)
    assert a == b == STREAM  # unpartitioned here; partitioned, both the name's partition


def test_work_with_nothing_returns_none(r: redis.Redis) -> None:
    assert timer(r, [], "idle").work() is None


def test_only_one_timer_holds_the_lease(r: redis.Redis) -> None:
    a, b = timer(r, [], "a"), timer(r, [], "b")
    assert a.hold() and not b.hold()
    assert 0 < b.standby_s() <= TimerCadence().lease_ttl_ms / 1000 + 1
    a.release()
    assert b.hold()


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        ('[{"cron": "*/5 * * *", "type": "demo.echo"}]', "expected 5 fields"),
        ('[{"cron": "61 * * * *", "type": "demo.echo"}]', "minute '61': 61 is out of range"),
        ('[{"cron": "* * * * *", "type": "no.such"}]', "no.such"),
        ('[{"cron": "* * * * *", "type": "demo.sleep", "data": {"ms": "x"}}]', "data.ms"),
        ("[{", "STREAMDESK_SCHEDULES is not JSON"),
    ],
)
def test_runworker_refuses_a_bad_schedule_at_start(
    r: redis.Redis, worker_env: dict[str, str], declared: str, message: str
) -> None:
    done = manage(dict(worker_env, STREAMDESK_SCHEDULES=declared), "runworker", "--burst")
    assert done.returncode == 1
    assert message in done.stderr
    assert "Traceback" not in done.stderr
