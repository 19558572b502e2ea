"""The timer candidates as runworker runs them (threads on a real server): due events moved
within a second and once with several candidates, and no command at all at rest."""

from __future__ import annotations

import asyncio
import functools
import time
import uuid
from collections.abc import Iterator

import pytest
import redis
import redis.asyncio as aredis

from tests.support.wait import wait_for
from workers.core.keys import Keys
from workers.producers.publish import build_envelope, scheduled_entry
from workers.redis.listener import Listener
from workers.timers import Due, Relayed, TimerThread, add, start_timer

# Lateness judged to the second, beside other tests' load: alone (make test).
pytestmark = pytest.mark.serial

STREAM = "streamdesk:events"
KEYS = Keys()


# The candidates' connections are named so: CLIENT LIST tells them apart on a shared server.
NAME = f"timer-test-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def candidates(r: redis.Redis) -> Iterator[list[TimerThread]]:
    kwargs = {**r.connection_pool.connection_kwargs, "client_name": NAME}
    started = []
    for _ in range(3):
        client = redis.Redis(**kwargs)
        started.append(
            start_timer(
                lambda: redis.Redis(**kwargs),
                KEYS,
                [],
                functools.partial(scheduled_entry, client),
                role="test",
            )
        )
    yield started
    for one in started:
        one.stop()


def test_candidates_move_due_events_once_within_a_second(
    r: redis.Redis, candidates: list[TimerThread]
) -> None:
    time.sleep(0.3)  # all three subscribed and dormant
    payloads = [build_envelope("demo.echo", {"n": n}).to_json() for n in range(300)]
    due = add(r, KEYS, [(STREAM, p) for p in payloads], Due(delay_ms=700))
    wait_for(lambda: r.xlen(STREAM) >= 300, timeout_s=5, what="300 delayed events")
    time.sleep(0.3)  # none moved twice meanwhile
    got = r.xrange(STREAM)
    assert sorted(f["event"] for _, f in got) == sorted(payloads)
    lateness_ms = [int(i.split("-")[0]) - d for (i, _), d in zip(got, sorted(due), strict=True)]
    assert max(lateness_ms) <= 1000
    assert min(lateness_ms) >= 0
    holders = [c for c in candidates if c.candidate.timer and c.candidate.timer.holding]
    assert len(holders) <= 1


def test_candidates_at_rest_send_no_command(r: redis.Redis, candidates: list[TimerThread]) -> None:
    time.sleep(0.5)  # each looked once at start, found nothing, and sleeps on its channel
    time.sleep(3)
    mine = [c for c in r.client_list() if c.get("name") == NAME]
    assert len(mine) >= 3  # at least each candidate's subscription
    # CLIENT LIST's idle: seconds since the connection's last command.
    assert all(int(c["idle"]) >= 3 for c in mine), [(c["cmd"], c["idle"]) for c in mine]


def test_stopped_holder_hands_over_at_once(r: redis.Redis, candidates: list[TimerThread]) -> None:
    time.sleep(0.3)
    add(r, KEYS, [(STREAM, build_envelope("demo.echo", {"n": 1}).to_json())], Due(delay_ms=60_000))
    wait_for(lambda: any(c.candidate.timer and c.candidate.timer.holding for c in candidates))
    holder = next(c for c in candidates if c.candidate.timer and c.candidate.timer.holding)
    holder.stop()
    others = [c for c in candidates if c is not holder]
    wait_for(
        lambda: any(c.candidate.timer and c.candidate.timer.holding for c in others),
        timeout_s=3,
        what="another candidate to take the lease",
    )


def test_a_lost_subscription_is_taken_again(r: redis.Redis, candidates: list[TimerThread]) -> None:
    time.sleep(0.3)
    # As after a Redis restart or a dropped connection: the candidates' subscriptions (only
    # theirs: the server may be shared) are cut off.
    subscribed = [c["id"] for c in r.client_list() if c.get("name") == NAME and int(c["sub"])]
    assert len(subscribed) >= 3
    for client_id in subscribed:
        r.client_kill_filter(_id=client_id)
    wait_for(
        lambda: len([c for c in r.client_list() if c.get("name") == NAME and int(c["sub"])]) >= 3,
        timeout_s=5,
        what="the candidates to subscribe again",
    )
    add(r, KEYS, [(STREAM, build_envelope("demo.echo", {"n": 1}).to_json())], Due(delay_ms=200))
    wait_for(lambda: r.xlen(STREAM) == 1, timeout_s=3, what="the delayed event")


async def _through_the_listener(url: str, r: redis.Redis) -> float:
    """A candidate fed by a worker process's listener: how long a delayed event due in
    0.2 s took to enter the stream."""
    client = aredis.Redis.from_url(url, decode_responses=True, client_name=NAME)
    relayed = Relayed()
    listener = Listener(client)
    listener.register(KEYS.timers_channel, relayed)
    kwargs = r.connection_pool.connection_kwargs
    timer = start_timer(
        lambda: redis.Redis(**kwargs),
        KEYS,
        [],
        functools.partial(scheduled_entry, r),
        role="test",
        wakeups=relayed,
    )
    listener.attend()
    try:
        await asyncio.sleep(0.5)  # subscribed, caught up, the candidate dormant
        payload = build_envelope("demo.echo", {"n": 1}).to_json()
        started = time.monotonic()
        await asyncio.to_thread(add, r, KEYS, [(STREAM, payload)], Due(delay_ms=200))
        while not r.xlen(STREAM) and time.monotonic() - started < 5:
            await asyncio.sleep(0.01)
        return time.monotonic() - started
    finally:
        await asyncio.to_thread(timer.stop)
        await listener.leave()
        await client.aclose()


def test_a_candidate_hears_its_channel_through_the_process_listener(
    r: redis.Redis, redis_url: str
) -> None:
    took_s = asyncio.run(_through_the_listener(redis_url, r))
    assert r.xlen(STREAM) == 1
    assert 0.2 <= took_s < 1.0


def test_a_holder_stays_awake_when_another_databases_timer_says_idle(
    r: redis.Redis, candidates: list[TimerThread]
) -> None:
    """Pub/sub channels are the server's, not a database's: a timer of another database on
    the same server says ``idle`` on the same channel; the holder here must still move what
    falls due (it went dormant, and a wait's 1 s timeout never came)."""
    time.sleep(0.3)
    add(r, KEYS, [(STREAM, build_envelope("demo.echo", {"n": 1}).to_json())], Due(delay_ms=800))
    wait_for(lambda: any(c.candidate.timer and c.candidate.timer.holding for c in candidates))
    r.publish(KEYS.timers_channel, "idle test:elsewhere:1:abcdef")
    wait_for(lambda: r.xlen(STREAM) == 1, timeout_s=3, what="the delayed event, moved")
