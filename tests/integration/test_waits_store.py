"""The waits' scripts against a real server (workers/waits/): a wait begun once however often
its run replays; an answer taken once, by the first matching event published after the wait
began; a timeout and an answer racing, one winner; a run's later wait replacing its earlier
one; the index and the shapes emptied as waits end; cancel."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import redis
import redis.asyncio as aredis

from workers.core.events import Envelope
from workers.core.keys import Keys
from workers.core.matching import digest
from workers.waits import WaitFor, Waits
from workers.waits.cancel import cancel_waits

STREAM = "streamdesk:events"
KEYS = Keys()
RUN = json.dumps({"type": "refund.requested", "id": "r1", "data": {"order_id": 42}})
T = TypeVar("T")


def on(match: dict[str, Any], timeout_ms: int = 60_000, step: str = "wait#1") -> WaitFor:
    return WaitFor("event", step, "refund.approval", match, delay_ms=timeout_ms)


def approval(order_id: Any, n: int = 1, **more: Any) -> Envelope:
    return Envelope(type="refund.approval", id=f"a{n}", data={"order_id": order_id, **more})


def run(redis_url: str, body: Callable[[Waits], Awaitable[T]]) -> T:
    async def main() -> T:
        client = aredis.Redis.from_url(redis_url, decode_responses=True)
        try:
            return await body(Waits(client, KEYS, STREAM, "agents"))
        finally:
            await client.aclose()

    return asyncio.run(main())


def publish(r: redis.Redis, event: Envelope) -> tuple[Envelope, str, str]:
    raw = event.to_json()
    return event, str(r.xadd(STREAM, {"event": raw})), raw


def resumed_copies(r: redis.Redis) -> list[str]:
    return [f["event"] for _, f in r.xrange(STREAM) if '"refund.requested"' in f["event"]]


def test_a_wait_begins_once_and_its_first_matching_answer_resumes_it_once(
    r: redis.Redis, redis_url: str
) -> None:
    async def body(waits: Waits) -> Any:
        first = await waits.wait("h1", "refund.requested", RUN, on({"data.order_id": 42}))
        again = await waits.wait("h1", "refund.requested", RUN, on({"data.order_id": 42}))
        assert (first.state, again.state, again.until_ms) == ("waiting", "waiting", first.until_ms)
        other = publish(r, approval(41, 1, approved=True))
        match = publish(r, approval(42, 2, approved=True))
        twice = publish(r, approval(42, 3, approved=False))
        answered = await waits.answer_batch([other, match, twice])
        later = await waits.answer_batch([match])  # the same entry redelivered
        return answered, later, await waits.wait("h1", "x", RUN, on({"data.order_id": 42}))

    answered, later, state = run(redis_url, body)
    assert answered.resumed == {r.xrange(STREAM)[1][0]: ["h1"]} and answered.count == 1
    assert later.count == 0
    assert state.state == "answered" and json.loads(state.answer)["id"] == "a2"
    assert resumed_copies(r) == [RUN]  # the run's event is back in the stream, once
    # Nothing left to find: the index, the shapes, the waiting set and the wake-up are gone.
    assert not r.exists(KEYS.wait_index(STREAM, digest("refund.approval", {"data.order_id": 42})))
    assert not r.exists(KEYS.wait_shapes(STREAM, "refund.approval"))
    assert r.zcard(KEYS.waiting(STREAM)) == 0 and r.zcard(KEYS.delayed(STREAM)) == 0
    assert r.sismember(KEYS.awaited_types(STREAM), "refund.approval")


def test_an_event_published_before_the_wait_began_does_not_answer_it(
    r: redis.Redis, redis_url: str
) -> None:
    early = publish(r, approval(42))

    async def body(waits: Waits) -> Any:
        await asyncio.sleep(0.005)  # the next millisecond at least: ids are ms
        await waits.wait("h1", "refund.requested", RUN, on({"data.order_id": 42}))
        return await waits.answer_batch([early])

    assert run(redis_url, body).count == 0
    assert r.hget(KEYS.wait(STREAM, "h1"), "state") == "waiting"


def test_a_wait_keeps_the_question_asked(r: redis.Redis, redis_url: str) -> None:
    asked = WaitFor("event", "wait#1", "refund.approval", {"data.order_id": 1}, note="Refund 80?")
    run(redis_url, lambda w: w.wait("h1", "t", RUN, asked))
    assert r.hget(KEYS.wait(STREAM, "h1"), "note") == "Refund 80?"


def test_matching_compares_json_values_and_subjects(r: redis.Redis, redis_url: str) -> None:
    async def body(waits: Waits) -> Any:
        await waits.wait("h1", "t", RUN, on({"data.order_id": 42}))
        await waits.wait("h2", "t", RUN, on({"subject": "o-7", "data.order_id": 7}))
        texts = publish(r, approval("42"))  # a string: not 42
        no_subject = publish(r, approval(7))
        both = publish(
            r, Envelope(type="refund.approval", id="s", subject="o-7", data={"order_id": 7})
        )
        return await waits.answer_batch([texts, no_subject, both])

    answered = run(redis_url, body)
    assert sorted(h for hs in answered.resumed.values() for h in hs) == ["h2"]


def test_a_timeout_and_an_answer_race_and_one_wins(r: redis.Redis, redis_url: str) -> None:
    async def body(waits: Waits) -> Any:
        await waits.wait("h1", "t", RUN, on({"data.order_id": 42}, timeout_ms=50))
        await asyncio.sleep(0.1)
        timed_out = await waits.wait("h1", "t", RUN, on({"data.order_id": 42}, timeout_ms=50))
        late = await waits.answer_batch([publish(r, approval(42))])
        return timed_out, late

    timed_out, late = run(redis_url, body)
    assert timed_out.state == "timed_out" and late.count == 0
    assert r.hget(KEYS.wait(STREAM, "h1"), "state") == "timed_out"
    assert r.ttl(KEYS.wait(STREAM, "h1")) > 0  # kept a while after it ended, not forever


def test_a_sleep_is_over_when_due_and_a_past_time_is_over_at_once(
    r: redis.Redis, redis_url: str
) -> None:
    async def body(waits: Waits) -> Any:
        first = await waits.wait("h1", "t", RUN, WaitFor("sleep", "sleep#1", delay_ms=100))
        early = await waits.wait("h1", "t", RUN, WaitFor("sleep", "sleep#1", delay_ms=100))
        await asyncio.sleep(0.15)
        over = await waits.wait("h1", "t", RUN, WaitFor("sleep", "sleep#1", delay_ms=100))
        past = await waits.wait("h2", "t", RUN, WaitFor("sleep", "sleep#1", at_ms=1000))
        return first, early, over, past

    first, early, over, past = run(redis_url, body)
    assert (first.state, early.state, over.state, past.state) == (
        "waiting", "waiting", "timed_out", "timed_out",
    )  # fmt: skip
    assert early.until_ms == first.until_ms  # a replay keeps the first due time
    assert not r.exists(KEYS.wait(STREAM, "h2"))  # nothing written for a time already past


def test_a_later_wait_of_the_same_run_replaces_an_abandoned_one(
    r: redis.Redis, redis_url: str
) -> None:
    async def body(waits: Waits) -> Any:
        await waits.wait("h1", "t", RUN, on({"data.order_id": 1}, step="wait#1"))
        await waits.wait("h1", "t", RUN, on({"data.order_id": 2}, step="wait#2"))
        return await waits.answer_batch([publish(r, approval(1)), publish(r, approval(2, 2))])

    answered = run(redis_url, body)
    assert answered.count == 1
    assert json.loads(r.hget(KEYS.wait(STREAM, "h1"), "answer") or "{}")["id"] == "a2"


def test_cancel_ends_a_wait_and_takes_back_its_wake_up(r: redis.Redis, redis_url: str) -> None:
    run(redis_url, lambda w: w.wait("h1", "t", RUN, on({"data.order_id": 42})))
    assert r.zcard(KEYS.delayed(STREAM)) == 1
    assert cancel_waits(r, KEYS, STREAM, ["h1", "unknown"], "alice") == 1
    assert cancel_waits(r, KEYS, STREAM, ["h1"], "alice") == 0
    assert r.hget(KEYS.wait(STREAM, "h1"), "cancelled_by") == "alice"
    assert r.zcard(KEYS.delayed(STREAM)) == 0 and r.zcard(KEYS.waiting(STREAM)) == 0
    answered = run(redis_url, lambda w: w.answer_batch([publish(r, approval(42))]))
    assert answered.count == 0 and resumed_copies(r) == []
